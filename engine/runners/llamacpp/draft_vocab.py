"""Whether a draft model's vocabulary is the target's: a draft is a list of token ids, which mean the same
text in both models only where the two vocabularies agree.

The rules are llama.cpp's for `--model-draft` (common/speculative.cpp): the same kind of tokenizer, the same
BOS and EOS, sizes at most VOCAB_SIZE_SLACK apart (a family's smaller model often has fewer padding rows:
Qwen2.5-0.5B and 7B), and the same text for every token id both have. llama.cpp compares the texts from id 5
on; every id is compared here, which takes a fraction of a second even for 150,000 tokens.
"""

from __future__ import annotations

import llama_cpp

# Most token ids the two vocabularies may differ by: llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE.
VOCAB_SIZE_SLACK = 128
_KINDS = {0: "none", 1: "SentencePiece", 2: "BPE", 3: "WordPiece", 4: "Unigram", 5: "RWKV", 6: "PLaMo-2"}


def vocabulary_problem(target: int, draft: int, target_name: str, draft_name: str) -> str:
    """Why the draft model's vocabulary (a llama_vocab pointer) cannot stand for the target's, in words; ""
    where it can."""
    kinds = int(llama_cpp.llama_vocab_type(target)), int(llama_cpp.llama_vocab_type(draft))
    if kinds[0] != kinds[1]:
        return (f"The draft model {draft_name} uses a {_KINDS.get(kinds[1], kinds[1])} tokenizer and {target_name} a "
                f"{_KINDS.get(kinds[0], kinds[0])} one: a draft model must share the model's vocabulary (take a "
                "smaller model of the same family).")
    sizes = int(llama_cpp.llama_vocab_n_tokens(target)), int(llama_cpp.llama_vocab_n_tokens(draft))
    if abs(sizes[0] - sizes[1]) > VOCAB_SIZE_SLACK:
        return (f"The draft model {draft_name} has {sizes[1]:,} tokens and {target_name} {sizes[0]:,}: a draft "
                "model must share the model's vocabulary (take a smaller model of the same family).")
    for what, read in (("beginning-of-text", llama_cpp.llama_vocab_bos), ("end-of-text", llama_cpp.llama_vocab_eos)):
        ids = int(read(target)), int(read(draft))
        if ids[0] != ids[1]:
            return (f"The draft model {draft_name} has token {ids[1]} as its {what} token and {target_name} token "
                    f"{ids[0]}: their vocabularies differ, so a draft model cannot be used with it.")
    for token in range(min(sizes)):
        texts = token_text(target, token), token_text(draft, token)
        if texts[0] != texts[1]:
            shown = [text.decode("utf-8", errors="replace") for text in texts]
            return (f"Token {token} is {shown[1]!r} in the draft model {draft_name} but {shown[0]!r} in "
                    f"{target_name}: their vocabularies differ, so a draft model cannot be used with it.")
    return ""


def token_text(vocab: int, token: int) -> bytes:
    return llama_cpp.llama_vocab_get_text(vocab, token) or b""

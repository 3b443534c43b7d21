"""A GGUF's special tokens as llama.cpp has them, in the tokenizer transformers builds from the file.

transformers' conversion (`gguf_file=`, 5.x) respells a byte-level vocabulary's tokens into the byte
alphabet and skips a control token whose text is not in it as a mislabel. But the markers of some
families are not ASCII: DeepSeek's `<｜User｜>` (fullwidth bars) then stays an ordinary vocabulary entry
that text never reaches, so it is cut into BPE pieces, and `<｜begin▁of▁sentence｜>`, named as BOS, comes
back as a new token past the vocabulary (an id the model has no row for). llama.cpp matches every
control and user-defined token whole, at its own id.

So after transformers builds the tokenizer, each control and user-defined token of the file is looked
for among the tokenizer's added tokens at the file's id. Where one is missing or another text stands
there, the vocabulary entry at that id is renamed to the file's text and the token added over it
(tokenizers gives an added token the id its text has in the vocabulary), and added tokens past the
file's vocabulary are dropped. Nothing in here knows a family.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from engine.catalog.gguf import read_gguf_shapes

log = logging.getLogger(__name__)

CONTROL, USER_DEFINED = 3, 4  # llama.cpp's token types (tokenizer.ggml.token_type)
TOKENS, TYPES = "tokenizer.ggml.tokens", "tokenizer.ggml.token_type"
ROLES = ("bos_token", "eos_token", "unk_token", "pad_token")


def gguf_added_tokens(path: Path) -> tuple[int, dict[int, tuple[str, bool]]]:
    """(the file's vocabulary size, {id: (text, special)} of its control and user-defined tokens)."""
    fields, _ = read_gguf_shapes(path, whole=(TOKENS, TYPES))
    tokens, types = fields.get(TOKENS), fields.get(TYPES)
    if not isinstance(tokens, list) or not isinstance(types, list):
        return 0, {}
    return len(tokens), {i: (text, kind == CONTROL) for i, (text, kind) in enumerate(zip(tokens, types))
                         if kind in (CONTROL, USER_DEFINED)}


def misplaced(tokenizer: Any, size: int, wanted: dict[int, tuple[str, bool]]) -> tuple[dict[int, str], list[int]]:
    """({id: text} of the file's added tokens the tokenizer lacks at their ids, the added ids past `size`)."""
    added = tokenizer.backend_tokenizer.get_added_tokens_decoder()
    missing = {i: text for i, (text, _) in wanted.items() if getattr(added.get(i), "content", None) != text}
    return missing, sorted(i for i in added if i >= size)


def repair_gguf_tokens(tokenizer: Any, path: Path) -> Any:
    """`tokenizer` with the file's control and user-defined tokens whole at the file's ids (module doc)."""
    size, wanted = gguf_added_tokens(path)
    if not size:
        return tokenizer
    missing, beyond = misplaced(tokenizer, size, wanted)
    if not missing and not beyond:
        return tokenizer
    from tokenizers import Tokenizer

    state = json.loads(tokenizer.backend_tokenizer.to_str())
    kept = _rename(state["model"], missing)
    texts = {text for i, text in missing.items() if i in kept}
    state["added_tokens"] = [token for token in state["added_tokens"]
                             if token["id"] < size and token["content"] not in texts] + [
        {"id": i, "content": missing[i], "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": wanted[i][1]} for i in sorted(kept)]
    tokenizer._tokenizer = Tokenizer.from_str(json.dumps(state))
    for role in ROLES:  # a role whose token was dropped (a made-up one past the vocabulary) has none
        token_id = tokenizer.convert_tokens_to_ids(getattr(tokenizer, role)) if getattr(tokenizer, role) else None
        if token_id is None or token_id >= size:
            setattr(tokenizer, role, None)
    if hasattr(tokenizer, "update_post_processor"):  # the BOS it adds, by its id now
        tokenizer.update_post_processor()
    log.info("%s: %d special tokens put back at the file's ids, %d made-up ones dropped", path.name, len(kept),
             len(beyond))
    return tokenizer


def _rename(model: dict[str, Any], missing: dict[int, str]) -> set[int]:
    """Give the vocabulary entries at the missing ids the file's texts; the ids done. A merge that made
    the old spelling goes with it (llama.cpp's vocabulary has no such token to merge into)."""
    vocab = model.get("vocab")
    if isinstance(vocab, list):  # unigram: [piece, score] by id
        done = {i for i, text in missing.items() if i < len(vocab)}
        for i in done:
            vocab[i][0] = missing[i]
        return done
    if not isinstance(vocab, dict):
        return set()
    spelled = {i: text for text, i in vocab.items()}
    done = {i for i, text in missing.items() if i in spelled and vocab.get(text, i) == i}
    old = {spelled[i] for i in done if spelled[i] != missing[i]}
    for i in done:
        del vocab[spelled[i]]
    vocab.update({missing[i]: i for i in done})
    if old and isinstance(model.get("merges"), list):
        model["merges"] = [pair for pair in model["merges"] if _merged(pair) not in old]
    return done


def _merged(pair: Any) -> str:
    return "".join(pair) if isinstance(pair, list) else str(pair).replace(" ", "", 1)

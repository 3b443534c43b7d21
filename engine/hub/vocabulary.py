"""A model's vocabulary read from the start of its GGUF file or from a folder's tokenizer.json, and whether a draft
model's can stand for a model's.

The rules are the ones the llama.cpp runner applies when it loads a draft model
(runners/llamacpp/draft_vocab.py, after llama.cpp's `--model-draft`): the same kind of
tokenizer, sizes at most VOCAB_SIZE_SLACK apart, the same BOS and EOS, and the same text
for every token id both have. Here they are checked from the GGUF metadata alone, so Get
models can tell before a download whether a suggested draft model would be refused at load.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from typing import Any

# Most token ids the two vocabularies may differ by: llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE, as the runner's
# check has it (not imported from there: that module loads llama.cpp, which a Hub query has no need of).
VOCAB_SIZE_SLACK = 128
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_KEEP = {"tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.bos_token_id",
         "tokenizer.ggml.eos_token_id"}


@dataclass(frozen=True)
class Vocabulary:
    kind: str  # tokenizer.ggml.model: "gpt2" (BPE), "llama" (SentencePiece), ...
    tokens: tuple[bytes, ...]
    bos: int | None
    eos: int | None


def read_vocabulary(data: bytes) -> Vocabulary:
    """The vocabulary in a GGUF file's metadata; `data` is the file's start. A start too short to hold the whole
    metadata raises struct.error (read more and try again); a file that is no GGUF raises ValueError."""
    if data[:4] != b"GGUF":
        raise ValueError(f"it starts with {data[:4]!r}, not GGUF")
    version, _tensors, n_fields = struct.unpack_from("<IQQ", data, 4)
    if not 2 <= version <= 3:
        raise ValueError(f"GGUF version {version} is not supported")
    offset, fields = 24, dict[str, Any]()
    for _ in range(n_fields):
        raw_key, offset = _string(data, offset)
        key = raw_key.decode("utf-8", "replace")
        (kind,) = struct.unpack_from("<I", data, offset)
        value, offset = _value(data, offset + 4, kind, keep=key in _KEEP)
        if key in _KEEP:
            fields[key] = value
    if "tokenizer.ggml.tokens" not in fields:
        raise ValueError("it has no vocabulary (tokenizer.ggml.tokens)")
    model = fields.get("tokenizer.ggml.model", b"")
    return Vocabulary(model.decode("utf-8", "replace") if isinstance(model, bytes) else str(model),
                      tuple(fields["tokenizer.ggml.tokens"]), fields.get("tokenizer.ggml.bos_token_id"),
                      fields.get("tokenizer.ggml.eos_token_id"))


def folder_vocabulary(tokenizer_json: bytes, tokenizer_config: bytes = b"") -> Vocabulary:
    """The vocabulary of a transformers folder: tokenizer.json's tokens by id (its model's and the added ones), and
    the BOS and EOS that tokenizer_config.json names, as the transformers runner compares them at load
    (runners/hf/draft_model.py); ValueError where tokenizer.json is not one."""
    try:
        tokenizer = json.loads(tokenizer_json)
        config = json.loads(tokenizer_config) if tokenizer_config else {}
        model = tokenizer["model"]
        vocab = model["vocab"]
        by_id = ({int(index): token for token, index in vocab.items()} if isinstance(vocab, dict)
                 else {index: piece for index, (piece, _score) in enumerate(vocab)})  # unigram: [piece, score]
        by_id.update({int(added["id"]): added["content"] for added in tokenizer.get("added_tokens") or []})
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"its tokenizer.json has no vocabulary ({error})") from error
    ids = {token: index for index, token in by_id.items()}

    def special(name: str) -> int | None:
        value = config.get(name) if isinstance(config, dict) else None
        value = value.get("content") if isinstance(value, dict) else value
        return ids.get(value) if isinstance(value, str) else None

    tokens = tuple(by_id.get(index, "").encode("utf-8") for index in range(max(by_id, default=-1) + 1))
    return Vocabulary(str(model.get("type", "")), tokens, special("bos_token"), special("eos_token"))


def _string(data: bytes, offset: int) -> tuple[bytes, int]:
    (length,) = struct.unpack_from("<Q", data, offset)
    end = offset + 8 + length
    if end > len(data):
        raise struct.error("the metadata goes on past what was read")
    return data[offset + 8:end], end


def _value(data: bytes, offset: int, kind: int, keep: bool) -> tuple[Any, int]:
    if kind == _STRING:
        return _string(data, offset)
    if kind != _ARRAY:
        (value,) = struct.unpack_from(_SCALARS[kind], data, offset)
        return value, offset + struct.calcsize(_SCALARS[kind])
    item_kind, length = struct.unpack_from("<IQ", data, offset)
    offset += 12
    if item_kind in _SCALARS:  # numbers (scores, token types): stepped over whole
        end = offset + struct.calcsize(_SCALARS[item_kind]) * length
        if end > len(data):
            raise struct.error("the metadata goes on past what was read")
        return None, end
    items = []
    for _ in range(length):  # strings (tokens, merges): each says its length
        item, offset = _value(data, offset, item_kind, keep)
        if keep:
            items.append(item)
    return items if keep else None, offset


def vocabulary_problem(model: Vocabulary, draft: Vocabulary, model_name: str, draft_name: str) -> str:
    """Why `draft`'s vocabulary cannot stand for `model`'s, in words; "" where it can."""
    if model.kind != draft.kind:
        return (f"{draft_name} uses a {draft.kind!r} tokenizer and {model_name} a {model.kind!r} one: a draft model "
                "must share the model's vocabulary.")
    sizes = len(model.tokens), len(draft.tokens)
    if abs(sizes[0] - sizes[1]) > VOCAB_SIZE_SLACK:
        return f"{draft_name} has {sizes[1]:,} tokens and {model_name} {sizes[0]:,}: their vocabularies differ."
    for what, ids in (("beginning-of-text", (model.bos, draft.bos)), ("end-of-text", (model.eos, draft.eos))):
        if ids[0] != ids[1]:
            return (f"{draft_name} has token {ids[1]} as its {what} token and {model_name} token {ids[0]}: their "
                    "vocabularies differ.")
    for token, (ours, theirs) in enumerate(zip(model.tokens, draft.tokens)):
        if ours != theirs:
            shown = theirs.decode("utf-8", "replace"), ours.decode("utf-8", "replace")
            return (f"Token {token} is {shown[0]!r} in {draft_name} but {shown[1]!r} in {model_name}: their "
                    "vocabularies differ.")
    return ""

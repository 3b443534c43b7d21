"""A vocabulary as a GGUF stores it (tokenizer.ggml.*), read from a vocab GGUF or made from BPE ranks.

llama.cpp's vocab GGUFs keep a family's tokens and merges; what changed between releases of a family
(Llama 3.1 named some reserved tokens, Qwen2.5 and Qwen3 added tool and thinking tokens) is applied
on top with `with_added`. Tiktoken-style vocabularies (Mistral's tekken, OpenAI's o200k) hold only
ranked byte strings: `from_ranks` writes them the way llama.cpp's converter does, each token's bytes
in GPT-2's printable byte alphabet and the merges recovered from the ranks (the pair whose merge made
each token, found by running BPE over its own bytes with the lower ranks only).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
LIST_KEYS = ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.scores")


@dataclass(frozen=True)
class Vocabulary:
    model: str  # tokenizer.ggml.model: "gpt2" (byte-level BPE), "llama" (SentencePiece), "gemma4", ...
    pre: str  # tokenizer.ggml.pre: how text is split before BPE ("qwen2", "llama-bpe", "tekken", "gpt-4o")
    tokens: tuple[str, ...]
    types: tuple[int, ...]
    merges: tuple[str, ...] = ()
    scores: tuple[float, ...] = ()
    scalars: dict[str, Any] = field(default_factory=dict)  # bos/eos ids, add_bos_token, ...

    def id_of(self, text: str) -> int:
        return self.tokens.index(text)

    def with_added(self, added: dict[int, tuple[str, int]], **scalars: Any) -> Vocabulary:
        """Tokens renamed or retyped at their ids (text, token type); ids past the end pad with UNUSED."""
        tokens, types = list(self.tokens), list(self.types)
        for token_id, (text, kind) in sorted(added.items()):
            while token_id >= len(tokens):
                tokens.append(f"[PAD{len(tokens)}]")
                types.append(UNUSED)
            tokens[token_id], types[token_id] = text, kind
        return replace(self, tokens=tuple(tokens), types=tuple(types), scalars={**self.scalars, **scalars})


def from_gguf(path: Path) -> Vocabulary:
    fields = {name: value for name, value in read_fields(path).items() if name.startswith("tokenizer.ggml.")}
    return Vocabulary(
        model=str(fields.pop("tokenizer.ggml.model")), pre=str(fields.pop("tokenizer.ggml.pre", "default")),
        tokens=tuple(fields.pop("tokenizer.ggml.tokens")), types=tuple(int(t) for t in fields.pop("tokenizer.ggml.token_type")),
        merges=tuple(fields.pop("tokenizer.ggml.merges", ())), scores=tuple(fields.pop("tokenizer.ggml.scores", ())),
        scalars={name: value for name, value in fields.items() if name not in LIST_KEYS})


def from_ranks(ranked: list[bytes], specials: dict[int, str], first_id: int, size: int, pre: str,
               **scalars: Any) -> Vocabulary:
    """Byte strings in rank order as tokens first_id, first_id + 1, ...; `specials` (id -> text) as
    control tokens; `size` tokens in all (ids no one names are unused)."""
    alphabet = _byte_alphabet()
    tokens = [f"[PAD{index}]" for index in range(size)]
    types = [UNUSED] * size
    kept = ranked[: size - first_id]
    for rank, piece in enumerate(kept):
        tokens[first_id + rank] = "".join(alphabet[byte] for byte in piece)
        types[first_id + rank] = NORMAL
    for token_id, text in specials.items():
        tokens[token_id], types[token_id] = text, CONTROL
    merges = tuple(" ".join("".join(alphabet[b] for b in part) for part in pair) for pair in _merges(kept))
    return Vocabulary("gpt2", pre, tuple(tokens), tuple(types), merges, scalars=dict(scalars))


def _merges(ranked: list[bytes]) -> list[tuple[bytes, bytes]]:
    ranks = {piece: rank for rank, piece in enumerate(ranked)}
    merges: list[tuple[bytes, bytes]] = []
    for rank, piece in enumerate(ranked):
        if len(piece) < 2:
            continue
        parts = _bpe(ranks, piece, rank)
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
    return merges


def _bpe(ranks: dict[bytes, int], piece: bytes, below: int) -> list[bytes]:
    parts = [piece[i : i + 1] for i in range(len(piece))]
    while len(parts) > 1:
        best, best_rank = -1, below
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < best_rank:
                best, best_rank = i, rank
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts


def _byte_alphabet() -> list[str]:
    """GPT-2's map of bytes to printable characters, as byte-level BPE vocabularies store tokens."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), 256))
    mapping, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            mapping[byte] = chr(byte)
        else:
            mapping[byte] = chr(256 + extra)
            extra += 1
    return [mapping[byte] for byte in range(256)]


# ---------------------------------------------------------------- the files the sources hold

_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9


def read_fields(path: Path) -> dict[str, Any]:
    """A GGUF's metadata (key -> value), read straight from its header: gguf's GGUFReader takes ~20 s on a
    262k-token vocabulary, this a second."""
    data = path.read_bytes()
    magic, _version, _tensors, count = struct.unpack_from("<4sIQQ", data)
    if magic != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file")
    at, fields = 24, {}
    for _ in range(count):
        key, at = _string(data, at)
        (kind,) = struct.unpack_from("<I", data, at)
        fields[key], at = _value(data, at + 4, kind)
    return fields


def _string(data: bytes, at: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", data, at)
    return data[at + 8 : at + 8 + length].decode("utf-8"), at + 8 + length


def _value(data: bytes, at: int, kind: int) -> tuple[Any, int]:
    if kind == _STRING:
        return _string(data, at)
    if kind == _ARRAY:
        item, length = struct.unpack_from("<IQ", data, at)
        at += 12
        if item in _SCALARS:
            size = struct.calcsize(_SCALARS[item])
            values = struct.unpack_from(f"<{length}{_SCALARS[item][1]}", data, at)
            return list(values), at + size * length
        items = []
        for _ in range(length):
            value, at = _value(data, at, item)
            items.append(value)
        return items, at
    (value,) = struct.unpack_from(_SCALARS[kind], data, at)
    return value, at + struct.calcsize(_SCALARS[kind])


def read_tekken(path: Path) -> list[bytes]:
    import base64
    import json

    data = json.loads(path.read_text())
    return [base64.b64decode(entry["token_bytes"]) for entry in sorted(data["vocab"], key=lambda e: e["rank"])]


def read_ranked(path: Path) -> list[bytes]:
    """quicktok's .vocab: a u32 count, then per token a u16 length, its bytes and its u32 rank."""
    data = path.read_bytes()
    (count,), at = struct.unpack_from("<I", data), 4
    pieces: dict[int, bytes] = {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, at)
        piece = data[at + 2 : at + 2 + length]
        (rank,) = struct.unpack_from("<I", data, at + 2 + length)
        pieces[rank] = piece
        at += 6 + length
    return [pieces[rank] for rank in range(len(pieces))]


def read_specials(path: Path) -> dict[int, str]:
    """quicktok's .special: a u32 count, then per token its u32 id, a u16 length and its text."""
    data = path.read_bytes()
    (count,), at = struct.unpack_from("<I", data), 4
    found: dict[int, str] = {}
    for _ in range(count):
        token_id, length = struct.unpack_from("<IH", data, at)
        found[token_id] = data[at + 6 : at + 6 + length].decode()
        at += 6 + length
    return found

"""Incremental detokenizers that never emit half a UTF-8 character.

`ByteDetokenizer` works from each token's raw bytes (llama.cpp pieces);
`OffsetDetokenizer` works from a tokenizer's `decode` (transformers), using the
prefix/read offsets of TGI and vLLM so merges across tokens come out right.
"""

from __future__ import annotations

import codecs
from typing import Callable, Sequence


class ByteDetokenizer:
    def __init__(self, token_bytes: Callable[[int], bytes]) -> None:
        self._token_bytes = token_bytes
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def add(self, token: int) -> str:
        return self._decoder.decode(self._token_bytes(token))

    def flush(self) -> str:
        return self._decoder.decode(b"", final=True)


class OffsetDetokenizer:
    """Decode a growing window of ids; emit only text that is complete."""

    def __init__(self, decode: Callable[[Sequence[int]], str]) -> None:
        self._decode = decode
        self._ids: list[int] = []
        self._prefix_offset = 0
        self._read_offset = 0

    def add(self, token: int) -> str:
        self._ids.append(token)
        prefix = self._decode(self._ids[self._prefix_offset : self._read_offset])
        full = self._decode(self._ids[self._prefix_offset :])
        if len(full) > len(prefix) and not full.endswith("\ufffd"):
            self._prefix_offset = self._read_offset
            self._read_offset = len(self._ids)
            return full[len(prefix) :]
        return ""

    def flush(self) -> str:
        prefix = self._decode(self._ids[self._prefix_offset : self._read_offset])
        full = self._decode(self._ids[self._prefix_offset :])
        self._prefix_offset = self._read_offset = len(self._ids)
        return full[len(prefix) :] if len(full) > len(prefix) else ""

"""llama.cpp's tokenizer as llguidance calls it, remembered where one call is slow.

Where the grammar forces the next bytes, llguidance asks the model's tokenizer for their canonical
tokens, once per such mask and walk step. For most vocabularies llama_tokenize answers in 2-10 us, but
where llama.cpp has no built-in splitter for the vocabulary's pre-tokenizer pattern (gpt-oss's o200k,
Mistral's tekken) it builds a std::regex on every call: 660 us and 315 us for a few bytes on these
machines, so a structured answer on gpt-oss spent 1.5 ms of every forced token there. The bytes asked
about repeat (a schema's keys, `": "`), so for such a vocabulary the calls go through a C callback that
keeps each answer; the others keep llama.cpp's function itself (a Python callback costs a few us).
"""

from __future__ import annotations

import ctypes
import statistics
import time
from typing import Any

import llama_cpp

from engine.runners.base import RunnerError

SLOW_CALL_S = 50e-6  # a call slower than this (median of a few) is remembered
MAX_REMEMBERED = 65_536  # answers kept; all are dropped when full (a schema's forced bytes are a few hundred)
_PROBE = b'{"name": "Ana", "age": 34}'

_TOKENIZE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                             ctypes.POINTER(ctypes.c_int32), ctypes.c_int32, ctypes.c_bool, ctypes.c_bool)


class TokenizeFunction:
    """The function pointer to hand llguidance for `vocab` (`address`); keep this object alive as long as
    the tokenizer built with it."""

    def __init__(self, vocab: int, remember: bool | None = None) -> None:
        """`remember`: whether to keep answers (None: where a call is slower than SLOW_CALL_S)."""
        self._vocab = vocab
        self._native: Any = llama_cpp.llama_cpp._lib.llama_tokenize
        self._answers: dict[tuple[bytes, bool, bool], tuple[int, ...]] = {}
        self.remembers = call_seconds(vocab) > SLOW_CALL_S if remember is None else remember
        self._callback = _TOKENIZE(self._tokenize) if self.remembers else None
        pointer = self._callback if self._callback is not None else self._native
        self.address = int(ctypes.cast(pointer, ctypes.c_void_p).value or 0)

    def _tokenize(self, _vocab: int, text: int | None, length: int, out: Any, capacity: int, add_special: bool,
                  parse_special: bool) -> int:
        data = ctypes.string_at(text, length) if text and length > 0 else b""
        key = (data, bool(add_special), bool(parse_special))
        tokens = self._answers.get(key)
        if tokens is None:
            tokens = tuple(tokenize_bytes(self._vocab, data, add_special, parse_special))
            if len(self._answers) >= MAX_REMEMBERED:
                self._answers.clear()
            self._answers[key] = tokens
        if len(tokens) > capacity:
            return -len(tokens)  # as llama_tokenize says how many it needs
        for index, token in enumerate(tokens):
            out[index] = token
        return len(tokens)


def tokenize_bytes(vocab: int, data: bytes, add_special: bool, parse_special: bool) -> list[int]:
    """llama_tokenize's tokens for `data`."""
    size = len(data) + 8
    tokens = (llama_cpp.llama_token * size)()
    count = llama_cpp.llama_tokenize(vocab, data, len(data), tokens, size, add_special, parse_special)
    if count < 0:
        size = -count
        tokens = (llama_cpp.llama_token * size)()
        count = llama_cpp.llama_tokenize(vocab, data, len(data), tokens, size, add_special, parse_special)
    if count < 0:
        raise RunnerError(f"The text could not be tokenized ({len(data)} bytes).")
    return list(tokens[:count])


def call_seconds(vocab: int, calls: int = 5) -> float:
    """The median time of one llama_tokenize call on a short JSON text."""
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        tokenize_bytes(vocab, _PROBE, False, False)
        times.append(time.perf_counter() - started)
    return statistics.median(times)

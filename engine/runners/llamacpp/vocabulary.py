"""A llama.cpp vocabulary's text side: tokenizing, and which texts are single special tokens.

Apart from the runner so that the same rules serve a vocabulary loaded alone (`vocab_only`), as the
family fixtures' token-level tests load one.
"""

from __future__ import annotations

import llama_cpp

from engine.runners.base import RunnerError
from engine.runners.llamacpp.rows import is_special


def tokenize(vocab: int, text: str, add_special: bool = False) -> list[int]:
    """`text`'s tokens, special tokens written in it read as such (parse_special)."""
    data = text.encode("utf-8")
    size = len(data) + 8
    tokens = (llama_cpp.llama_token * size)()
    count = llama_cpp.llama_tokenize(vocab, data, len(data), tokens, size, add_special, True)
    if count < 0:
        size = -count
        tokens = (llama_cpp.llama_token * size)()
        count = llama_cpp.llama_tokenize(vocab, data, len(data), tokens, size, add_special, True)
    if count < 0:
        raise RunnerError(f"The text could not be tokenized ({len(data)} bytes).")
    return list(tokens[:count])


def special_id(vocab: int, text: str) -> int | None:
    """The id of the special token `text` is (rows.is_special), else None."""
    tokens = tokenize(vocab, text)
    return tokens[0] if len(tokens) == 1 and is_special(vocab, tokens[0]) else None

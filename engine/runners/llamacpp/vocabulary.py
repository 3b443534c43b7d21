"""A llama.cpp vocabulary's text side: tokenizing, and which texts are single special tokens.

Apart from the runner so that the same rules serve a vocabulary loaded alone (`vocab_only`), as the
family fixtures' token-level tests load one.
"""

from __future__ import annotations


from engine.runners.llamacpp.rows import is_special
from engine.runners.llamacpp.tokenize_cache import tokenize_bytes


def tokenize(vocab: int, text: str, add_special: bool = False) -> list[int]:
    """`text`'s tokens, special tokens written in it read as such (parse_special)."""
    return tokenize_bytes(vocab, text.encode("utf-8"), add_special, True)


def special_id(vocab: int, text: str) -> int | None:
    """The id of the special token `text` is (rows.is_special), else None."""
    tokens = tokenize(vocab, text)
    return tokens[0] if len(tokens) == 1 and is_special(vocab, tokens[0]) else None

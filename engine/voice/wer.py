"""Word error rate: how far a transcript is from what was said, in words (substituted + dropped + added) / said."""

from __future__ import annotations

import re
from collections.abc import Iterable

_WORD = re.compile(r"[\w']+")


def words_of(text: str) -> list[str]:
    """Lower-case words without punctuation: "Turn it off, please." and "turn it off please" are the same words."""
    return [word.strip("'") for word in _WORD.findall(text.lower()) if word.strip("'")]


def edit_distance(said: list[str], heard: list[str]) -> int:
    previous = list(range(len(heard) + 1))
    for row, word in enumerate(said, 1):
        current = [row]
        for column, other in enumerate(heard, 1):
            current.append(min(previous[column] + 1, current[column - 1] + 1,
                               previous[column - 1] + (word != other)))
        previous = current
    return previous[-1]


def word_error_rate(pairs: Iterable[tuple[str, str]]) -> float:
    """The WER of (said, heard) pairs together: the errors of all over the words of all (as benchmarks count it)."""
    errors = total = 0
    for said, heard in pairs:
        said_words = words_of(said)
        errors += edit_distance(said_words, words_of(heard))
        total += len(said_words)
    return errors / total if total else 0.0

"""Prompt lookup: one chat's tokens indexed by their n-grams, and the earlier place its last tokens repeat.

What followed that place is the chat's guess (engine/speculative.py). The longest n-gram that matches wins,
n from MAX_NGRAM down to 1, as llama.cpp's n-gram drafts and transformers' PromptLookupCandidateGenerator do;
of several places with that n-gram, the one nearest where the chat was last found copying from.
"""

from __future__ import annotations

import bisect

from engine.tuning import MAX_NGRAM


class PromptLookup:
    """One chat's tokens, and its n-grams (n = 1..MAX_NGRAM) with where each occurred with a token after it.

    `copying_from` is the position in the tokens that the chat's last token is thought to repeat: set
    by each match (the end of the occurrence used), moved on with every token added."""

    def __init__(self, max_ngram: int = MAX_NGRAM) -> None:
        self.max_ngram = max_ngram
        self.tokens: list[int] = []
        self.copying_from: int | None = None
        self._ends: dict[tuple[int, ...], list[int]] = {}  # n-gram -> ends of its occurrences with a follower, rising

    def extend(self, tokens: list[int]) -> None:
        history, index = self.tokens, self._ends
        for token in tokens:
            end = len(history) - 1  # the n-grams ending here now have a follower: `token`
            for size in range(1, min(self.max_ngram, end + 1) + 1):
                index.setdefault(tuple(history[end - size + 1 : end + 1]), []).append(end)
            history.append(token)
        if self.copying_from is not None:
            self.copying_from += len(tokens)

    def match(self, limit: int) -> tuple[int, list[int]]:
        """(n, up to `limit` tokens that followed an earlier occurrence of the last n tokens), n largest;
        of its occurrences the one ending nearest `copying_from`, or the latest."""
        history = self.tokens
        for size in range(min(self.max_ngram, len(history)), 0, -1):
            ends = self._ends.get(tuple(history[-size:]))
            if ends:
                end = self._nearest(ends)
                self.copying_from = end
                return size, history[end + 1 : end + 1 + limit]
        return 0, []

    def _nearest(self, ends: list[int]) -> int:
        target = self.copying_from
        if target is None:
            return ends[-1]
        at = bisect.bisect_left(ends, target)
        around = ends[max(at - 1, 0) : at + 1]
        return min(around, key=lambda end: (abs(end - target), -end))

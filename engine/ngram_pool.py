"""A model's shared n-gram pool: guesses for one chat from what every chat of that model has read and written.

Prompt lookup (engine/speculative.py) guesses from a chat's own context only. A chat that repeats
what another chat wrote (a second tab asked to tidy the first tab's code, an API client sending
the answer back for a rewrite, a document quoted in several chats) finds nothing there; this pool
has it. It is llama.cpp's `ngram-mod` idea: a table from the hash of every POOL_NGRAM tokens seen
to the token that last followed them, fed with every drafting chat's prompt (documents and
pasted text included: they are part of the prompt) and answer. A draft chains the table: the
chat's last POOL_NGRAM tokens give the next token, that token and the two before it the one after,
and so on.

Token ids mean something only within one vocabulary, so each loaded model has its own pool (the
scheduler holds it). The table is bounded: past POOL_MAX_ENTRIES the n-gram used least recently
goes. Two n-grams whose hashes collide share an entry; that only spoils a guess, and every guess
is verified by the model like any draft, so the answer never depends on the pool.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

# What each constant decides, and where it was chosen: engine/tuning.py.
from engine.tuning import POOL_MAX_ENTRIES, POOL_NGRAM


class NgramPool:
    """Hash of `ngram` tokens -> the token that last followed them, least recently used first."""

    def __init__(self, ngram: int = POOL_NGRAM, max_entries: int = POOL_MAX_ENTRIES) -> None:
        self.ngram = ngram
        self.max_entries = max_entries
        self._followers: OrderedDict[int, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._followers)

    def add(self, tokens: Sequence[int], new: int) -> None:
        """Learn the n-grams followed by one of the last `new` of `tokens` (the ones before are known)."""
        size, table = self.ngram, self._followers
        for end in range(max(len(tokens) - new, size), len(tokens)):
            key = hash(tuple(tokens[end - size : end]))
            table[key] = tokens[end]
            table.move_to_end(key)
        while len(table) > self.max_entries:
            table.popitem(last=False)

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        """Up to `limit` tokens that followed the last `ngram` of `tokens` elsewhere, chained."""
        if len(tokens) < self.ngram:
            return []
        window = list(tokens[-self.ngram :])
        guess: list[int] = []
        while len(guess) < limit:
            key = hash(tuple(window))
            follower = self._followers.get(key)
            if follower is None:
                break
            self._followers.move_to_end(key)
            guess.append(follower)
            window = window[1:] + [follower]
        return guess

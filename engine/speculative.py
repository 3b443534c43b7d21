"""Prompt-lookup speculative decoding: guesses from a chat's own context, and when they pay.

A generating chat often repeats what it has seen: code it was asked to edit, a
pasted text it rewrites, a document it quotes, its own earlier answer. The last
few tokens are looked up earlier in the chat's context (prompt and answer so
far; the most recent occurrence of the longest n-gram that matches, n from
MAX_NGRAM down to 1, as llama.cpp's n-gram drafts and transformers'
PromptLookupCandidateGenerator do), and what followed there is the draft. The
scheduler feeds it beside the chat's last token in the step's one forward
pass; the runner verifies it with the chat's own sampler (engine/runners/base.py),
so the answer is the one it would have been without drafts.

A draft token is worth its cost when the chance it is used beats what it costs
relative to the time a generated token takes (StepCost measures that ratio on
the running machine: about half a token on a 2-core CPU, almost nothing on a
GPU). The chance that draft token i is used is p**i, p being the chat's recent
rate of drafted tokens accepted given the ones before were (kept per n-gram
length: a 3-token match predicts better than a 1-token one). So the draft is
as long as p**i stays above the ratio. A chat whose drafts do not pay stops
drafting and tries a single token again after a pause, which doubles with each
miss: open-ended chat, or a machine where a draft token costs nearly what a
generated one does, then loses almost nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

MAX_NGRAM = 3  # longest run of last tokens looked up
MAX_DRAFT = 16  # longest draft, whatever the odds
PRIOR_ACCEPTED, PRIOR_TRIED = 1.0, 2.0  # before anything is known: an even chance per token
MEMORY = 0.8  # weight of the past in the acceptance rate, per draft checked
FIRST_PAUSE, MAX_PAUSE = 4, 256  # steps without drafts after a miss; doubles with each further miss
DEFAULT_COST_RATIO = 0.5  # a draft token's cost in generated tokens' time, until StepCost has measured it
MIN_COST_RATIO = 0.02  # a GPU's drafts are nearly free, never quite
TIMING_MEMORY = 0.95  # weight of the past in StepCost's fit, per step
MIN_TIMED_STEPS, MIN_SPREAD = 8.0, 0.25  # fewer steps, or steps of too alike sizes, tell nothing yet


class PromptLookup:
    """One chat's tokens, and its n-grams (n = 1..MAX_NGRAM) with where each last occurred with a token after it."""

    def __init__(self, max_ngram: int = MAX_NGRAM) -> None:
        self.max_ngram = max_ngram
        self.tokens: list[int] = []
        self._last_end: dict[tuple[int, ...], int] = {}  # n-gram -> end of its latest occurrence with a follower

    def extend(self, tokens: list[int]) -> None:
        history, index = self.tokens, self._last_end
        for token in tokens:
            end = len(history) - 1  # the n-grams ending here now have a follower: `token`
            for size in range(1, min(self.max_ngram, end + 1) + 1):
                index[tuple(history[end - size + 1 : end + 1])] = end
            history.append(token)

    def match(self, limit: int) -> tuple[int, list[int]]:
        """(n, up to `limit` tokens that followed the latest earlier occurrence of the last n tokens), n largest."""
        history = self.tokens
        for size in range(min(self.max_ngram, len(history)), 0, -1):
            end = self._last_end.get(tuple(history[-size:]))
            if end is not None:
                return size, history[end + 1 : end + 1 + limit]
        return 0, []


@dataclass
class Odds:
    """How often a chat's drafted tokens are accepted, given the ones before them were."""

    accepted: float = PRIOR_ACCEPTED
    tried: float = PRIOR_TRIED

    def record(self, drafted: int, accepted: int) -> None:
        # The tokens after the first rejected one were never put to the test.
        self.accepted = MEMORY * self.accepted + accepted
        self.tried = MEMORY * self.tried + min(accepted + 1, drafted)

    def worth_drafting(self, cost_ratio: float) -> int:
        """The longest draft whose every token is more likely used (p**i) than it costs."""
        rate = self.accepted / self.tried
        if rate >= 1.0:
            return MAX_DRAFT
        if rate <= cost_ratio or rate <= 0.0:
            return 0
        return min(MAX_DRAFT, int(math.log(cost_ratio) / math.log(rate)))


@dataclass
class Speculator:
    """One turn's drafting: its lookup, its odds per n-gram length, its pause, and the tally for its stats."""

    is_end: Callable[[int], bool]  # end-of-generation tokens: a draft stops before one
    lookup: PromptLookup = field(default_factory=PromptLookup)
    odds: dict[int, Odds] = field(default_factory=dict)
    pause: int = 0  # steps left without drafts
    next_pause: int = FIRST_PAUSE
    drafted: int = 0
    accepted: int = 0
    _size: int = 0  # n-gram length of the draft last proposed, and the cost ratio it was weighed against
    _ratio: float = DEFAULT_COST_RATIO

    def propose(self, new_tokens: list[int], room: int, cost_ratio: float, probe: bool = True) -> list[int]:
        """This step's draft after `new_tokens` (the chat's tokens since the last call), at most `room` long;
        without `probe`, no one-token guess made only to learn the odds."""
        self.lookup.extend(new_tokens)
        if self.pause > 0:
            self.pause -= 1
            return []
        size, following = self.lookup.match(min(room, MAX_DRAFT))
        if not following:
            return []
        self._size, self._ratio = size, cost_ratio
        length = self.odds.setdefault(size, Odds()).worth_drafting(cost_ratio)
        if length == 0 and not probe:
            return []
        draft = following[: max(length, 1)]  # 0: not worth it, but one token keeps the odds honest
        for position, token in enumerate(draft):
            if self.is_end(token):
                return draft[:position]
        return draft

    def record(self, drafted: int, accepted: int) -> None:
        odds = self.odds.setdefault(self._size, Odds())
        odds.record(drafted, accepted)
        self.drafted += drafted
        self.accepted += accepted
        if odds.worth_drafting(self._ratio) > 0:
            self.next_pause = FIRST_PAUSE
            return
        # Drafting does not pay (yet): even a guess that held cost nearly a token, so wait before
        # the next one; after a miss, twice as long as last time.
        self.pause = self.next_pause
        if accepted < drafted:
            self.next_pause = min(MAX_PAUSE, self.next_pause * 2)


@dataclass
class _LineFit:
    """`seconds = fixed + per_token * tokens` by least squares, older steps fading."""

    weight: float = 0.0
    sum_x: float = 0.0
    sum_y: float = 0.0
    sum_xx: float = 0.0
    sum_xy: float = 0.0
    fit: tuple[float, float] | None = None  # (fixed, per_token) from the last steps of spread sizes

    def observe(self, tokens: int, seconds: float) -> None:
        memory = TIMING_MEMORY
        self.weight = memory * self.weight + 1.0
        self.sum_x = memory * self.sum_x + tokens
        self.sum_y = memory * self.sum_y + seconds
        self.sum_xx = memory * self.sum_xx + tokens * tokens
        self.sum_xy = memory * self.sum_xy + tokens * seconds
        self._refit()

    def _refit(self) -> None:
        """The line through the recent steps, when their sizes are spread enough to tell the parts
        apart. Otherwise the last fit stands: steps of one size are what follows once drafts stop
        paying, and forgetting why they stopped would start them again."""
        if self.weight < MIN_TIMED_STEPS:
            return
        mean_x, mean_y = self.sum_x / self.weight, self.sum_y / self.weight
        spread = self.sum_xx / self.weight - mean_x * mean_x
        if spread >= MIN_SPREAD:
            per_token = (self.sum_xy / self.weight - mean_x * mean_y) / spread
            self.fit = (mean_y - per_token * mean_x, per_token)


@dataclass
class StepCost:
    """A draft token's cost relative to a generated token's time, from the decode steps' timings.

    Step time is fitted as `fixed + per_token * tokens fed`, one line per number of chats
    decoding together: what a token adds depends on how many are already in the step (on a CPU,
    four chats' tokens already keep the cores busy, and a fifth token costs nearly a generated
    one's time; alone, a chat's step mostly waits on the weights and drafts ride along). Drafts of
    different lengths spread the points, so no step has to go without drafts to measure.
    """

    lines: dict[int, _LineFit] = field(default_factory=dict)

    def observe(self, decoding: int, tokens: int, prompt_tokens: int, seconds: float) -> None:
        if prompt_tokens > 0 or decoding <= 0:
            return  # a prompt chunk's cost would drown the drafts'
        self.lines.setdefault(decoding, _LineFit()).observe(tokens, seconds)

    def ratio(self, decoding: int) -> float:
        """What one more token adds to a step of `decoding` one-token chats, over the time per generated
        token; until that many chats have been timed together, the nearest count's line says it."""
        fits = {count: line.fit for count, line in self.lines.items() if line.fit is not None}
        if not fits:
            return DEFAULT_COST_RATIO
        fixed, per_token = fits[min(fits, key=lambda count: (abs(count - decoding), -count))]
        step = fixed + per_token * decoding
        if step <= 0.0:
            return DEFAULT_COST_RATIO
        return min(1.0, max(MIN_COST_RATIO, per_token * decoding / step))

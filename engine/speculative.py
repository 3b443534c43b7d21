"""Prompt-lookup speculative decoding: guesses from a chat's own context, and when they pay.

A generating chat often repeats what it has seen: code it was asked to edit, a
pasted text it rewrites, a document it quotes, its own earlier answer. The last
few tokens are looked up earlier in the chat's context (prompt and answer so
far; the longest n-gram that matches, n from MAX_NGRAM down to 1, as llama.cpp's
n-gram drafts and transformers' PromptLookupCandidateGenerator do), and what
followed there is the draft. Of several places with that n-gram, the one
nearest the place the chat was last found copying from wins (at first, the
most recent): a chat rewriting a passage goes on where it was, while "the" or
"of the" occur all over it. The scheduler feeds the draft beside the chat's
last token in the step's one forward pass; the runner verifies it with the
chat's own sampler (engine/runners/base.py), so the answer is the one it would
have been without drafts.

How long the drafts are is a matter of tokens per second. Draft token i of a
chat is used with chance p**i, p being the chat's recent rate of drafted tokens
accepted given the ones before were (kept per n-gram length: a 3-token match
predicts better than a 1-token one); each costs a share of a one-token step
that StepCost measures on the running machine (about 0.4 of a token's time on a
2-core CPU, almost nothing on a GPU). `draft_lengths` adds draft tokens, the
likeliest first over all chats of the step, while each raises the step's
expected tokens per second; so a chat at p = 0.9 on that CPU drafts 4 tokens,
not the 8 whose every token is merely likelier used than it costs.

A chat whose drafts do not pay stops guessing and tries a single token again
after a pause, which doubles with each miss (grows fourfold while no guess of
the turn has held): open-ended chat, or a machine
where a draft token costs nearly what a generated one does, then loses almost
nothing. The pause holds back only such guesses: a match of a length whose
drafts have paid is drafted at once (a chat back on a passage after changing a
word in it).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Callable

# What each constant decides, and where it was measured or why chosen: engine/tuning.py.
from engine.tuning import (
    ACCEPTANCE_MEMORY,
    DEFAULT_COST_RATIO,
    FIRST_PAUSE,
    MAX_DRAFT,
    MAX_NGRAM,
    MAX_PAUSE,
    MIN_COST_RATIO,
    MIN_SPREAD,
    MIN_TIMED_STEPS,
    PAUSE_GROWTH_NEVER_ACCEPTED,
    PRIOR_ACCEPTED,
    PRIOR_TRIED,
    TIMING_MEMORY,
)


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


@dataclass
class Odds:
    """How often a chat's drafted tokens are accepted, given the ones before them were."""

    accepted: float = PRIOR_ACCEPTED
    tried: float = PRIOR_TRIED
    checked: int = 0  # drafts recorded

    @property
    def rate(self) -> float:
        return self.accepted / self.tried

    def record(self, drafted: int, accepted: int) -> None:
        # The tokens after the first rejected one were never put to the test.
        self.accepted = ACCEPTANCE_MEMORY * self.accepted + accepted
        self.tried = ACCEPTANCE_MEMORY * self.tried + min(accepted + 1, drafted)
        self.checked += 1

    def pays(self, cost_ratio: float) -> bool:
        """Whether even a one-token draft is likelier used than it costs."""
        return self.rate > cost_ratio


def draft_lengths(rates: list[float], limits: list[int], cost_ratio: float) -> list[int]:
    """How many of its guessed tokens each chat of a step drafts, for the most tokens per second.

    Chat j's i-th draft token is used with chance rates[j]**i and costs cost_ratio / n of a step of
    the n chats' one token each (StepCost.ratio). Tokens are added likeliest first while each one's
    chance beats its cost times the step's expected tokens per unit of time so far: then it raises
    that rate, and since each chat's chances only fall, stopping there is the best the step can do."""
    count = len(rates)
    lengths = [0] * count
    if count == 0:
        return lengths
    per_token = cost_ratio / count
    expected, seconds = float(count), 1.0  # a step of one token each takes 1
    chances = [min(rate, 1.0) for rate in rates]
    while True:
        open_chats = [j for j in range(count) if lengths[j] < limits[j] and chances[j] > 0.0]
        if not open_chats:
            return lengths
        best = max(open_chats, key=lambda j: chances[j])
        if chances[best] * seconds <= per_token * expected:
            return lengths
        lengths[best] += 1
        expected += chances[best]
        seconds += per_token
        chances[best] *= min(rates[best], 1.0)


@dataclass
class Speculator:
    """One turn's drafting: its lookup, its odds per n-gram length, its pause, and the tally for its stats."""

    is_end: Callable[[int], bool]  # end-of-generation tokens: a draft stops before one
    lookup: PromptLookup = field(default_factory=PromptLookup)
    odds: dict[int, Odds] = field(default_factory=dict)
    pause: int = 0  # steps left without guesses
    next_pause: int = FIRST_PAUSE
    drafted: int = 0
    accepted: int = 0
    guess: list[int] = field(default_factory=list)  # this step's lookup, before its length is chosen
    _size: int = 0  # n-gram length of the guess, and the cost ratio its draft was weighed against
    _ratio: float = DEFAULT_COST_RATIO

    def look_up(self, new_tokens: list[int], room: int) -> list[int]:
        """This step's guess after `new_tokens` (the chat's tokens since the last call), at most `room` long."""
        self.lookup.extend(new_tokens)
        size, following = self.lookup.match(min(room, MAX_DRAFT))
        for position, token in enumerate(following):
            if self.is_end(token):
                following = following[:position]
                break
        self._size, self.guess = size, following
        return following

    @property
    def rate(self) -> float:
        """The chance that the guess's next token is used, from its n-gram length's record."""
        return self._odds().rate if self.guess else 0.0

    def draft(self, length: int, cost_ratio: float, probe: bool = True) -> list[int]:
        """The guess cut to `length` (from draft_lengths). None of it while paused, unless this n-gram
        length has drafted and paid before; a length of 0 still guesses one token, to keep the odds
        honest, when `probe` allows and no pause holds it back."""
        self._ratio = cost_ratio
        paused = self.pause > 0
        if paused:
            self.pause -= 1
        if length > 0 and (not paused or self._odds().checked > 0):
            return self.guess[:length]
        if probe and not paused:
            return self.guess[:1]
        return []

    def propose(self, new_tokens: list[int], room: int, cost_ratio: float, probe: bool = True) -> list[int]:
        """A chat's draft when it is alone in the step."""
        self.look_up(new_tokens, room)
        return choose_drafts([self], cost_ratio, probe)[0]

    def record(self, drafted: int, accepted: int) -> None:
        odds = self._odds()
        odds.record(drafted, accepted)
        self.drafted += drafted
        self.accepted += accepted
        if odds.pays(self._ratio):
            self.next_pause = FIRST_PAUSE
            return
        # Guessing does not pay (yet): even a guess that held cost nearly a token, so wait before
        # the next one; after a miss, twice as long as last time (four times while none has ever held).
        self.pause = self.next_pause
        if accepted < drafted:
            growth = 2 if self.accepted else PAUSE_GROWTH_NEVER_ACCEPTED
            self.next_pause = min(MAX_PAUSE, self.next_pause * growth)

    def _odds(self) -> Odds:
        return self.odds.setdefault(self._size, Odds())


def choose_drafts(speculators: list[Speculator | None], cost_ratio: float, probe: bool = True) -> list[list[int]]:
    """The drafts of a step's chats, from the guesses their look_up left (None: a chat that never drafts)."""
    lengths = draft_lengths([s.rate if s else 0.0 for s in speculators], [len(s.guess) if s else 0 for s in speculators],
                            cost_ratio)
    return [s.draft(length, cost_ratio, probe) if s else [] for s, length in zip(speculators, lengths)]


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

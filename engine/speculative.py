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
that StepCost measures on the running machine (engine/step_cost.py: about 0.4 of a
token's time on a 2-core CPU alone, more beside other chats, almost nothing on a GPU). `draft_lengths` adds draft tokens, the
likeliest first over all chats of the step, while each raises the step's
expected tokens per second; so a chat at p = 0.9 on that CPU drafts 4 tokens,
not the 8 whose every token is merely likelier used than it costs.

A chat whose drafts do not pay stops guessing and tries a single token again
after a pause, which doubles with each miss (grows fourfold while no guess of
the turn from that source has held): open-ended chat, or a machine
where a draft token costs nearly what a generated one does, then loses almost
nothing. The pause holds back only such guesses: a match of a length whose
drafts have paid is drafted at once (a chat back on a passage after changing a
word in it).

Where the chat's own context matches fewer of its last tokens than the model's shared n-gram
pool keys on (engine/ngram_pool.py: every chat's n-grams), the pool guesses instead. The odds are
kept per source and n-gram length, so a pool whose guesses miss backs off on its own while the
chat's lookup keeps drafting, and the other way round.

Where the runner has a draft model (runners/llamacpp/draft_model.py), it is a third source: a chat whose
context and pool have no guess, or whose draft model has been accepted more often than the match found,
asks the draft model, and its length is chosen before the draft model runs (each of its tokens costs a round
of the draft model besides its share of the step: `extra_costs`). Every chat of a step that asks gets its
draft from the same batched rounds of the draft model. A draft model whose token costs a generated token's
time or more (one as large as the model) is not even probed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engine.ngram_pool import NgramPool
from engine.prompt_lookup import PromptLookup
from engine.step_cost import prior_cost_ratio

# What each constant decides, and where it was measured or why chosen: engine/tuning.py.
from engine.tuning import (
    ACCEPTANCE_MEMORY,
    FIRST_PAUSE,
    MAX_DRAFT,
    MAX_MODEL_DRAFT,
    MAX_PAUSE,
    PAUSE_GROWTH_NEVER_ACCEPTED,
    PRIOR_ACCEPTED,
    PRIOR_TRIED,
)

# Where a guess came from: the chat's own context, the model's shared n-gram pool (engine/ngram_pool.py), or a
# draft model loaded beside the model (ModelConfig.draft_model).
Source = Literal["lookup", "pool", "draft"]
# (index of a chat in the step, how many tokens) -> each one's guess from the draft model, in one batched call
ModelDrafts = Callable[[Sequence[tuple[int, int]]], list[list[int]]]


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


def draft_lengths(rates: list[float], limits: list[int], cost_ratio: float,
                  extra_costs: Sequence[float] | None = None) -> list[int]:
    """How many of its guessed tokens each chat of a step drafts, for the most tokens per second.

    Chat j's i-th draft token is used with chance rates[j]**i and costs (cost_ratio + extra_costs[j]) / n of
    a step of the n chats' one token each (StepCost.ratio; the extra is what making the guess costs, in
    generated tokens' time: a draft model's round). Tokens are added best chance per cost first while each
    one's chance beats its cost times the step's expected tokens per unit of time so far: then it raises
    that rate, and since each chat's chances only fall, stopping there is the best the step can do."""
    count = len(rates)
    lengths = [0] * count
    if count == 0:
        return lengths
    extra = extra_costs or [0.0] * count
    per_token = [max((cost_ratio + extra[j]) / count, 1e-9) for j in range(count)]
    expected, seconds = float(count), 1.0  # a step of one token each takes 1
    chances = [min(rate, 1.0) for rate in rates]
    while True:
        open_chats = [j for j in range(count) if lengths[j] < limits[j] and chances[j] > 0.0]
        if not open_chats:
            return lengths
        best = max(open_chats, key=lambda j: chances[j] / per_token[j])
        if chances[best] * seconds <= per_token[best] * expected:
            return lengths
        lengths[best] += 1
        expected += chances[best]
        seconds += per_token[best]
        chances[best] *= min(rates[best], 1.0)


@dataclass
class Speculator:
    """One turn's drafting: its lookup, the model's shared pool, its odds per source and n-gram length, its
    pause, and the tally for its stats (in all, and per source)."""

    is_end: Callable[[int], bool]  # end-of-generation tokens: a draft stops before one
    pool: NgramPool | None = None  # guesses where the chat's own context has no match as long as the pool's
    # False: the chat feeds the pool but takes no guesses from it. An answer that must repeat (greedy, or a fixed
    # seed) drafts from its own conversation only: the pool holds other chats' text, and where a draft's batch
    # rounds unlike one token (or a sample is drawn against a draft) its guesses could part the answer.
    pool_drafts: bool = True
    model_drafts: bool = False  # the runner has a draft model to ask where lookup and pool guess worse
    lookup: PromptLookup = field(default_factory=PromptLookup)
    odds: dict[tuple[Source, int], Odds] = field(default_factory=dict)
    pauses: dict[Source, list[int]] = field(default_factory=dict)  # [steps left without guesses, the next pause]
    drafted: int = 0
    accepted: int = 0
    by_source: dict[Source, tuple[int, int]] = field(default_factory=dict)  # (drafted, accepted)
    guess: list[int] = field(default_factory=list)  # this step's lookup, before its length is chosen
    source: Source = "lookup"  # where the guess came from
    model_room: int = 0  # with the draft model as this step's source: the most tokens it may be asked for
    _size: int = 0  # n-gram length of the guess, and the cost ratio its draft was weighed against
    _ratio: float = field(default_factory=lambda: prior_cost_ratio(1))

    def look_up(self, new_tokens: list[int], room: int) -> list[int]:
        """This step's guess after `new_tokens` (the chat's tokens since the last call), at most `room` long:
        the chat's own context's, or the pool's where that matches fewer tokens than the pool's n-grams."""
        lookup, pool, limit = self.lookup, self.pool, min(room, MAX_DRAFT)
        lookup.extend(new_tokens)
        size, following = lookup.match(limit)
        self.source = "lookup"
        if pool is not None:
            pool.add(lookup.tokens, len(new_tokens))
            pooled = pool.draft(lookup.tokens, limit) if size < pool.ngram and self.pool_drafts else []
            if pooled:
                size, following, self.source = pool.ngram, pooled, "pool"
        following = self._before_end(following)
        self._size, self.guess = size, following
        if self.model_drafts and limit > 0 and self._model_guesses_better():
            self.source, self._size, self.guess, self.model_room = "draft", 0, [], min(limit, MAX_MODEL_DRAFT)
        return following

    def _before_end(self, tokens: list[int]) -> list[int]:
        for position, token in enumerate(tokens):
            if self.is_end(token):
                return tokens[:position]
        return tokens

    def _model_guesses_better(self) -> bool:
        """Whether this step asks the draft model: where there is no other guess, or where its record beats the
        guess's own and no pause holds it back."""
        if not self.guess:
            return True
        model = self.odds.get(("draft", 0), Odds())
        return self.pauses.get("draft", [0])[0] == 0 and model.rate > self._odds().rate

    @property
    def limit(self) -> int:
        """This step's longest draft: the guess's length, or what the draft model may be asked for."""
        return self.model_room if self.source == "draft" else len(self.guess)

    def take_model_draft(self, tokens: list[int]) -> None:
        """The draft model's guess for this step (asked for by choose_drafts)."""
        self.guess = self._before_end(tokens)

    @property
    def rate(self) -> float:
        """The chance that the guess's next token is used, from its n-gram length's record."""
        return self._odds().rate if self.limit else 0.0

    def draft(self, length: int, cost_ratio: float, probe: bool = True) -> list[int]:
        """The guess cut to draft_count's length."""
        return self.guess[: self.draft_count(length, cost_ratio, probe)]

    def draft_count(self, length: int, cost_ratio: float, probe: bool = True) -> int:
        """How much of the guess is drafted, given `length` from draft_lengths: none while paused, unless this
        n-gram length has drafted and paid before; a length of 0 still guesses one token, to keep the odds
        honest, when `probe` allows and no pause holds it back. `cost_ratio`: a drafted token's whole cost."""
        self._ratio = cost_ratio
        paused = self.pause > 0
        for pause in self.pauses.values():  # a pause counts steps, whichever source guessed in them
            pause[0] = max(pause[0] - 1, 0)
        if length > 0 and (not paused or self._odds().checked > 0):
            return min(length, self.limit)
        if probe and not paused:
            return min(1, self.limit)
        return 0

    def propose(self, new_tokens: list[int], room: int, cost_ratio: float, probe: bool = True) -> list[int]:
        """A chat's draft when it is alone in the step."""
        self.look_up(new_tokens, room)
        return choose_drafts([self], cost_ratio, probe)[0]

    def record(self, drafted: int, accepted: int) -> None:
        odds = self._odds()
        odds.record(drafted, accepted)
        self.drafted += drafted
        self.accepted += accepted
        before = self.by_source.get(self.source, (0, 0))
        self.by_source[self.source] = (before[0] + drafted, before[1] + accepted)
        if odds.pays(self._ratio):
            self.next_pause = FIRST_PAUSE
            return
        # Guessing does not pay (yet): even a guess that held cost nearly a token, so wait before
        # the next one; after a miss, twice as long as last time (four times while none has ever held).
        self.pause = self.next_pause
        if accepted < drafted:
            growth = 2 if self.by_source[self.source][1] else PAUSE_GROWTH_NEVER_ACCEPTED
            self.next_pause = min(MAX_PAUSE, self.next_pause * growth)

    @property
    def pause(self) -> int:
        """Steps left without guesses from the source of this step's guess (its own misses set it)."""
        return self.pauses.setdefault(self.source, [0, FIRST_PAUSE])[0]

    @pause.setter
    def pause(self, steps: int) -> None:
        self.pauses.setdefault(self.source, [0, FIRST_PAUSE])[0] = steps

    @property
    def next_pause(self) -> int:
        return self.pauses.setdefault(self.source, [0, FIRST_PAUSE])[1]

    @next_pause.setter
    def next_pause(self, steps: int) -> None:
        self.pauses.setdefault(self.source, [0, FIRST_PAUSE])[1] = steps

    def _odds(self) -> Odds:
        return self.odds.setdefault((self.source, self._size), Odds())


def choose_drafts(speculators: list[Speculator | None], cost_ratio: float, probe: bool = True,
                  model_drafts: ModelDrafts | None = None, model_cost: float = 0.0) -> list[list[int]]:
    """The drafts of a step's chats, from the guesses their look_up left (None: a chat that never drafts).
    Those whose source is the draft model get theirs from one `model_drafts` call, each of its tokens costing
    `model_cost` of a generated token's time on top of its share of the step. A source whose token would cost
    a generated token's time or more is not even probed: a guess always right would not pay (a draft model as
    slow as the model)."""
    extra = [model_cost if s and s.source == "draft" else 0.0 for s in speculators]
    lengths = draft_lengths([s.rate if s else 0.0 for s in speculators], [s.limit if s else 0 for s in speculators],
                            cost_ratio, extra)
    counts = [s.draft_count(length, cost_ratio + cost, probe and cost_ratio + cost < 1.0) if s else 0
              for s, length, cost in zip(speculators, lengths, extra)]
    asked = [(j, count) for j, (s, count) in enumerate(zip(speculators, counts)) if s and s.source == "draft" and count]
    if asked and model_drafts is not None:
        for (j, _), tokens in zip(asked, model_drafts(asked)):
            speculator = speculators[j]
            assert speculator is not None
            speculator.take_model_draft(tokens)
    return [s.guess[:count] if s else [] for s, count in zip(speculators, counts)]

"""Which tokens of which chats run in the next step: ONE forward pass within the runner's token budget.

Generating sequences contribute one token each, first; then their drafts: the tokens their constraint
forces next where it does (engine/constraints/forced.py), else guessed next tokens (prompt lookup, the
shared pool or a draft model: engine/speculative.py) as long as drafting pays on this machine; waiting prompts
fill the rest of the budget in chunks, in the order their turns arrived. A prompt's chunk stops before a
picture that is still being encoded beside the steps (the llama.cpp runner on the CPU: picture_encoder.py):
the chat waits for it while the others step on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence as SequenceOf

from engine.runners.base import Drafter, Runner, RunnerError, SlotWork, drafter_of, picture_encoding_of
from engine.sequence import Sequence
from engine.slots import Slot, SlotTable
from engine.speculative import choose_drafts
from engine.step_cost import StepCost
from engine.tuning import DRAFT_SHARE_BESIDE_PROMPTS

Planned = list[tuple[Sequence, SlotWork]]
log = logging.getLogger(__name__)
PICTURE_WAIT_S = 0.05  # how long a step with nothing but a picture's encode to wait for waits before looking again


def plan_step(slots: SlotTable, runner: Runner, step_cost: StepCost, prompt_tokens_cap: int | None) -> Planned:
    """Decode tokens first, then drafts, then prompt chunks in arrival order, within the step's budget;
    `prompt_tokens_cap`: at most this many prompt tokens (None: what the batch leaves)."""
    budget = runner.batch_tokens
    # A turn whose constraint waits for the runner (StepResults.install_constraint, scheduling/results.py) sits this step out
    running = [pair for pair in slots.running() if pair[1].pending_constraint is None]
    running = sorted(running, key=lambda pair: (pair[1].uncomputed > 1, pair[1].submitted_at))
    decoding = [pair for pair in running if pair[1].uncomputed == 1][: max(budget, 0)]
    prompts = [pair for pair in running if pair[1].uncomputed > 1]
    budget -= len(decoding)
    share = int(budget * DRAFT_SHARE_BESIDE_PROMPTS) if prompts else budget
    drafts = _drafts(decoding, share, runner, step_cost)
    planned = [
        (sequence, SlotWork(slot.index, sequence.tokens_between(sequence.computed, sequence.length),
                            sequence.computed, True, draft, forced))
        for (slot, sequence), (draft, forced) in zip(decoding, drafts)
    ]
    budget -= sum(len(draft) for draft, _ in drafts)
    if prompt_tokens_cap is not None:
        budget = min(budget, prompt_tokens_cap)
    reading = []
    pictures = picture_encoding_of(runner)
    for slot, sequence in prompts:
        if budget <= 0:
            break
        count = min(sequence.uncomputed, budget)
        start = sequence.computed
        if pictures is not None:  # never past a picture still being encoded (its encode starts here)
            count = min(count, pictures.readable_until(sequence.tokens_between(start, sequence.length)))
            if count == 0:
                continue
        tokens = sequence.tokens_between(start, start + count)
        planned.append((sequence, SlotWork(slot.index, tokens, start, start + count == sequence.length)))
        reading.append((slot.index, sequence, start + count))
        budget -= count
    _read_beside(reading, runner, step_cost)
    if not planned and prompts and pictures is not None:
        pictures.wait_encoding(PICTURE_WAIT_S)  # nothing else to step: no spinning while the encoder works
    return planned


def _read_beside(reading: list[tuple[int, Sequence, int]], runner: Runner, step_cost: StepCost) -> None:
    """The draft model reads each prompt chunk (slot, chat, its end) as the model reads it, so its first draft
    reads only the tokens after it; not where it will never be asked (its token costs a generated one's time or
    more even for a chat alone: speculative.choose_drafts)."""
    drafter = drafter_of(runner)
    if drafter is None or step_cost.ratio(1) + _model_cost(drafter, step_cost, 1) >= 1.0:
        return
    for slot, sequence, end in reading:
        if sequence.speculator is not None and sequence.speculator.model_drafts:
            try:
                drafter.read(slot, sequence.tokens_between(0, end))
            except RunnerError as error:  # it reads the prompt again at its first draft
                log.warning("the draft model could not read a prompt: %s", error)


def _drafts(decoding: list[tuple[Slot, Sequence]], budget: int, runner: Runner,
            step_cost: StepCost) -> list[tuple[list[int], bool]]:
    """Each sequence's draft and whether its constraint forced it (no guess: every row's sample is certain),
    else as long as a guess pays (draft_lengths); the budget shared fairly: the shortest first, none more than
    an equal part. The draft model, where there is one, guesses for every chat that asks it in one call."""
    sequences = [sequence for _, sequence in decoding]
    rooms = [_draft_room(sequence, runner.context_length) for sequence in sequences]
    forced = [runner.forced_tokens(slot.index, room) if runner.can_draft else []
              for (slot, _), room in zip(decoding, rooms)]
    if runner.splits_uneven_steps and len(forced) > 1:
        forced = _even(forced)
    ratio = step_cost.ratio(len(sequences))
    # Beside other chats on llama.cpp a guess made only to learn the odds costs a pass of its own, which
    # measured slower than no drafts at all (docs/benchmarks.md): a chat probes alone.
    probe = not (runner.splits_uneven_steps and len(sequences) > 1)
    for sequence, room in zip(sequences, rooms):
        sequence.look_up_draft(room)
    drafter = drafter_of(runner)

    def model_drafts(asked: SequenceOf[tuple[int, int]]) -> list[list[int]]:
        assert drafter is not None
        wants = [(decoding[j][0].index, sequences[j].tokens_between(0, sequences[j].length), count) for j, count in asked]
        try:
            return drafter.draft(wants, runner.is_end_of_generation)
        except RunnerError as error:  # a guess is never needed: the step goes on without this one
            log.warning("the draft model could not draft: %s", error)
            return [[] for _ in asked]

    guesses = choose_drafts([None if tokens else sequence.speculator for sequence, tokens in zip(sequences, forced)],
                            ratio, probe, model_drafts if drafter is not None else None,
                            _model_cost(drafter, step_cost, len(sequences)))
    drafts = [tokens or guess for tokens, guess in zip(forced, guesses)]
    left = len(drafts)
    for index in sorted(range(len(drafts)), key=lambda i: len(drafts[i])):
        drafts[index] = drafts[index][: max(budget, 0) // left]
        budget -= len(drafts[index])
        left -= 1
    return [(draft, bool(tokens) and bool(draft)) for draft, tokens in zip(drafts, forced)]


def _even(forced: list[list[int]]) -> list[list[int]]:
    """The forced drafts cut to the one length that gives a step the most tokens per pass where the runner runs
    a pass per distinct number of tokens a chat feeds: chats forced that far take that many, the others none.
    Length L gives n + L * (chats forced that far) tokens in one pass where every chat is, else in two; none,
    n in one. (Four chats, one forced 3 tokens: 7 tokens in two passes, slower than none; forced 8: faster.)"""
    best, best_length = float(len(forced)), 0
    for length in sorted({len(tokens) for tokens in forced if tokens}):
        takers = sum(len(tokens) >= length for tokens in forced)
        rate = (len(forced) + length * takers) / (1 if takers == len(forced) else 2)
        if rate > best:
            best, best_length = rate, length
    return [tokens[:best_length] if len(tokens) >= best_length else [] for tokens in forced]


def _model_cost(drafter: Drafter | None, step_cost: StepCost, decoding: int) -> float:
    """What a token the draft model guesses costs, in generated tokens' time of a step of `decoding` chats: its
    measured seconds over the model's fitted time per generated token, else its weights' share of the model's."""
    if drafter is None:
        return 0.0
    token_seconds = step_cost.token_seconds(decoding)
    if drafter.seconds_per_token is None or token_seconds is None:
        return drafter.size_ratio
    return drafter.seconds_per_token / token_seconds


def _draft_room(sequence: Sequence, context_length: int) -> int:
    """Drafts never run past the token limit or the context: the step's own token always comes on top."""
    tokens_left = sequence.params.max_new_tokens - len(sequence.output) - 1
    budget = sequence.params.reasoning_budget
    if budget is not None and sequence.in_reasoning:
        # The thinking's budget is reached at the step's own token at the latest: its close goes in after it.
        tokens_left = min(tokens_left, budget - sequence.reasoning_tokens - 1)
    return min(tokens_left, context_length - sequence.length)

"""Continuous batching: which tokens of which chats run in the next step.

Every step is ONE forward pass. Generating sequences contribute one token
each; waiting prompts fill the rest of the token budget in chunks. A chat
keeps its slot's KV cache between turns, so a new turn feeds only what
follows the longest common prefix. With more chats than slots, the least
recently used idle slot is taken over and its chat re-prefills later; which
slot holds what is the slot table's business (engine/slots.py).

A generating chat may also feed a draft of guessed next tokens (prompt
lookup, engine/speculative.py) in the same pass; the runner returns the ones
its sampler agreed with plus its own next token, and the scheduler drops the
rejected rest from the cache and applies stop strings, the token limit and
the context's end to each accepted token in turn, exactly as if they had come
one per step.

A constrained turn waits (in the queue, or paused where its grammar starts mid-answer) while the
runner builds what constraints need on a worker thread (Runner.constraints_ready): the other chats
keep stepping meanwhile.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace

from engine.constraints import ConstraintError, check
from engine.parsing.answer_grammar import turn_constraints
from engine.parsing.prompt import TurnSetup, plain_turn
from engine.protocol import (
    Constraint,
    Event,
    FinishReason,
    Logprobs,
    SamplingParams,
    TurnFinished,
    TurnStarted,
)
from engine.runners.base import Runner, RunnerError, SlotWork
from engine.sequence import Sequence, Status, common_prefix_length
from engine.slots import MIN_SHARED_PREFIX, Slot, SlotTable
from engine.speculative import Speculator, StepCost, choose_drafts
from engine.tuning import DRAFT_SHARE_BESIDE_PROMPTS

CONSTRAINTS_WAIT_S = 0.05  # how long an idle step waits for the constraints' tokenizer before looking again


class Scheduler:
    def __init__(self, runner: Runner, step_cost: StepCost | None = None) -> None:
        self.runner = runner
        # At most this many prompt tokens a step (None: what the batch leaves); the engine sets it while
        # another model's chats stream, so this model's long prompt comes in smaller chunks between their steps.
        self.prompt_tokens_cap: int | None = None
        self.slots = SlotTable(runner.slots, runner.clear_slot)
        self.waiting: deque[Sequence] = deque()
        self.sampled_log: deque[tuple[float, str]] = deque()  # (time, chat) per token
        self.draft_log: deque[tuple[float, int, int]] = deque()  # (time, drafted, accepted) per draft checked
        self.step_cost = step_cost or StepCost()  # what drafts cost on this machine, from the steps' timings

    # ------------------------------------------------------------ commands

    def submit(self, chat_id: str, prompt: list[int], params: SamplingParams,
               setup: TurnSetup | None = None) -> list[Event]:
        """`setup` says how to read the output (engine/parsing/prompt.py); None: the model's plain format."""
        events = self.cancel(chat_id)
        if self.runner.end_markers and not params.ignore_eos:
            params = replace(params, stop=params.stop + self.runner.end_markers)
        setup = setup or plain_turn(self.runner.output_format)
        asked = params.constraint
        try:
            if asked is not None:
                check(asked)  # the client's own constraint first: its error names what the client wrote
            # room to think, then the answer under the client's schema and/or the call grammar
            first, after = turn_constraints(setup, asked)
            if first is not None:
                check(first)
        except ConstraintError as error:
            sequence = Sequence(chat_id, prompt, params, self.runner.detokenizer(), setup=setup)
            return events + self._finish(sequence, "error", str(error))
        sequence = Sequence(chat_id, prompt, replace(params, constraint=first), self.runner.detokenizer(), setup=setup)
        sequence.answer_constraint, sequence.answer_due = after, first is None and after is not None
        limit = self.runner.context_length
        if len(prompt) >= limit:
            message = (
                f"This conversation is {len(prompt)} tokens long, more than the model's context of "
                f"{limit} tokens. Start a new chat, shorten the message, or raise the context length in Settings."
            )
            return events + self._finish(sequence, "error", message)
        self.waiting.append(sequence)
        return events

    def constrain(self, chat_id: str, constraint: Constraint | None) -> bool:
        """Keep the running turn of `chat_id` to `constraint` from its next token on (None: free again);
        False when the chat has no running turn. See Sequence.constrain_next."""
        for sequence in self.running():
            if sequence.chat_id == chat_id:
                sequence.constrain_next(constraint)
                return True
        return False

    def cancel(self, chat_id: str) -> list[Event]:
        events: list[Event] = []
        for sequence in [s for s in self.waiting if s.chat_id == chat_id]:
            self.waiting.remove(sequence)
            events += self._finish(sequence, "cancelled")
        for sequence in [s for s in self.running() if s.chat_id == chat_id]:
            events += self._finish(sequence, "cancelled")
        return events

    def close(self, chat_id: str) -> list[Event]:
        events = self.cancel(chat_id)
        self.slots.forget_chat(chat_id)
        return events

    def cancel_all(self, reason_message: str) -> list[Event]:
        events: list[Event] = []
        for chat_id in {s.chat_id for s in self.running() + list(self.waiting)}:
            for event in self.cancel(chat_id):
                if isinstance(event, TurnFinished):
                    event = replace(event, reason="cancelled", message=reason_message)
                events.append(event)
        return events

    # ------------------------------------------------------------ state

    def running(self) -> list[Sequence]:
        return [sequence for _, sequence in self.slots.running()]

    def has_work(self) -> bool:
        return bool(self.waiting) or self.slots.busy() > 0

    def slots_busy(self) -> int:
        return self.slots.busy()

    def decoding(self) -> bool:
        """A chat here is generating (not only reading its prompt): its stream waits on every step elsewhere."""
        return any(sequence.uncomputed == 1 for sequence in self.running())

    def chat_ids(self) -> tuple[str, ...]:
        """The chats with a turn here, running or waiting."""
        return tuple(dict.fromkeys([s.chat_id for s in self.running()] + [s.chat_id for s in self.waiting]))

    # ------------------------------------------------------------ the step

    def step(self) -> list[Event]:
        events = self._admit()
        for slot, sequence in self.slots.running():  # constrain() called between two steps
            if sequence.pending_constraint is not None:
                events += self._install_constraint(sequence, slot)
        planned = self._plan()
        if not planned:
            if self._held_for_constraints():
                self.runner.constraints_ready(wait=CONSTRAINTS_WAIT_S)  # nothing else to step: no spinning
            return events
        started = time.perf_counter()
        try:
            sampled = self.runner.forward([work for _, work in planned])
        except RunnerError as error:
            # A full cache (CacheFull) too: each chat has its own stream, so giving up other chats' caches
            # makes no room, and the runner has already taken the step's tokens into its cache record,
            # penalty history and prompt copy: feeding the step again would apply them twice.
            return events + self._fail(self.running(), str(error))
        self._time_step([work for _, work in planned], time.perf_counter() - started)
        return events + self._update(planned, sampled)

    def _held_for_constraints(self) -> bool:
        return any(s.params.constraint is not None for s in self.waiting) or any(
            s.pending_constraint is not None for s in self.running())

    def _time_step(self, work: list[SlotWork], seconds: float) -> None:
        prompt_tokens = sum(len(item.tokens) for item in work if len(item.tokens) > 1 or not item.sample)
        decoding = sum(1 for item in work if item.sample and len(item.tokens) == 1)
        self.step_cost.observe(decoding, sum(len(item.fed) for item in work), prompt_tokens, seconds)

    def _admit(self) -> list[Event]:
        events: list[Event] = []
        deferred: list[Sequence] = []
        while self.waiting:
            sequence = self.waiting.popleft()
            if sequence.params.constraint is not None and not self.runner.constraints_ready():
                deferred.append(sequence)  # its grammar cannot be set yet: the others go first
                continue
            if self.slots.prefix_being_computed(sequence):
                deferred.append(sequence)  # it will copy that prefix in a step or two
                continue
            slot = self.slots.slot_for(sequence.chat_id, sequence.prompt)
            if slot is None:
                self.waiting.appendleft(sequence)
                break
            try:
                events.append(self._start(sequence, slot))
            except ConstraintError as error:  # it checked out, but not against this vocabulary
                events += self._finish(sequence, "error", str(error))
        self.waiting.extendleft(reversed(deferred))
        return events

    def _start(self, sequence: Sequence, slot: Slot) -> TurnStarted:
        reuse = self._reuse_cache(sequence.prompt, slot)
        self.slots.occupy(slot, sequence)
        sequence.status = Status.RUNNING
        sequence.computed = sequence.reused = reuse
        if sequence.params.speculative != "off" and self.runner.can_draft:
            sequence.speculator = Speculator(self.runner.is_end_of_generation)
        self.runner.begin_turn(slot.index, sequence.params)
        return TurnStarted(sequence.chat_id, len(sequence.prompt), reuse)

    def _reuse_cache(self, prompt: list[int], slot: Slot) -> int:
        """Leave in the slot's cache the longest start of `prompt` it can have; return its length."""
        reuse = min(common_prefix_length(slot.cached, prompt), len(prompt) - 1)
        donor, shared = self.slots.donor_for(prompt, slot)
        # Another slot may have computed a longer start of this prompt (a shared system
        # prompt, the same question in two tabs): share it rather than recompute it.
        if donor is not None and shared >= reuse + MIN_SHARED_PREFIX and self.runner.copy_prefix(
            donor.index, slot.index, shared
        ):
            slot.cached = donor.cached[:shared]
            return shared
        if reuse < len(slot.cached):
            if not self.runner.remove_from(slot.index, reuse):
                # Sliding-window or recurrent caches can't drop a tail: start clean.
                self.runner.clear_slot(slot.index)
                reuse = 0
            del slot.cached[reuse:]
        return reuse

    def _plan(self) -> list[tuple[Sequence, SlotWork]]:
        """Decode tokens first, then drafts, then prompt chunks in arrival order, within the step's budget."""
        budget = self.runner.batch_tokens
        # A turn whose constraint waits for the runner (_install_constraint) sits this step out
        running = [pair for pair in self.slots.running() if pair[1].pending_constraint is None]
        running = sorted(running, key=lambda pair: (pair[1].uncomputed > 1, pair[1].submitted_at))
        decoding = [pair for pair in running if pair[1].uncomputed == 1][: max(budget, 0)]
        prompts = [pair for pair in running if pair[1].uncomputed > 1]
        budget -= len(decoding)
        share = int(budget * DRAFT_SHARE_BESIDE_PROMPTS) if prompts else budget
        drafts = self._drafts([sequence for _, sequence in decoding], share)
        planned = [
            (sequence, SlotWork(slot.index, sequence.tokens_between(sequence.computed, sequence.length),
                                sequence.computed, True, draft))
            for (slot, sequence), draft in zip(decoding, drafts)
        ]
        budget -= sum(len(draft) for draft in drafts)
        if self.prompt_tokens_cap is not None:
            budget = min(budget, self.prompt_tokens_cap)
        for slot, sequence in prompts:
            if budget <= 0:
                break
            count = min(sequence.uncomputed, budget)
            start = sequence.computed
            tokens = sequence.tokens_between(start, start + count)
            planned.append((sequence, SlotWork(slot.index, tokens, start, start + count == sequence.length)))
            budget -= count
        return planned

    def _drafts(self, sequences: list[Sequence], budget: int) -> list[list[int]]:
        """Each sequence's draft, as long as it pays (draft_lengths), the budget shared fairly: the shortest
        first, none more than an equal part."""
        ratio = self.step_cost.ratio(len(sequences))
        # Beside other chats on llama.cpp a guess made only to learn the odds costs a pass of its own:
        # four tabs of open-ended chat ran at 0.95x with such probes (docs/benchmarks.md); a chat probes alone.
        probe = not (self.runner.splits_uneven_steps and len(sequences) > 1)
        for sequence in sequences:
            sequence.look_up_draft(self._draft_room(sequence))
        drafts = choose_drafts([sequence.speculator for sequence in sequences], ratio, probe)
        left = len(drafts)
        for index in sorted(range(len(drafts)), key=lambda i: len(drafts[i])):
            drafts[index] = drafts[index][: max(budget, 0) // left]
            budget -= len(drafts[index])
            left -= 1
        return drafts

    def _draft_room(self, sequence: Sequence) -> int:
        """Drafts never run past the token limit or the context: the step's own token always comes on top."""
        tokens_left = sequence.params.max_new_tokens - len(sequence.output) - 1
        budget = sequence.params.reasoning_budget
        if budget is not None and sequence.in_reasoning:
            # The thinking's budget is reached at the step's own token at the latest: its close goes in after it.
            tokens_left = min(tokens_left, budget - sequence.reasoning_tokens - 1)
        return min(tokens_left, self.runner.context_length - sequence.length)

    def _update(self, planned: list[tuple[Sequence, SlotWork]], sampled: dict[int, list[int]]) -> list[Event]:
        events: list[Event] = []
        now = time.perf_counter()
        for sequence, work in planned:
            slot = self.slots[work.slot]
            new = sampled.get(work.slot, []) if work.sample else []
            accepted = min(max(len(new) - 1, 0), len(work.draft))
            slot.cached.extend(work.tokens + work.draft[:accepted])
            slot.last_used = now
            sequence.computed += len(work.tokens) + accepted
            if work.draft:
                self._settle_draft(sequence, slot, len(work.draft), accepted, now)
            events += self._take(sequence, slot, new, now)
        return events

    def _take(self, sequence: Sequence, slot: Slot, new: list[int], now: float) -> list[Event]:
        """The step's tokens of one sequence in order, as if they had come one per step; their
        log-probabilities (where asked) just before the turn's end."""
        events: list[Event] = []
        before = len(sequence.output)
        for token in new:
            events += self._accept(sequence, token, now)
            if sequence.status is Status.FINISHED:
                break  # what the model accepted after a stop is dropped, as if never generated
            if sequence.pending_constraint is not None:
                events += self._install_constraint(sequence, slot)
                break  # the rest was sampled free: it is sampled again under the constraint
        taken = len(sequence.output) - before
        if sequence.params.logprobs is not None and taken:
            entries = self.runner.step_logprobs(slot.index)[:taken]
            ended = bool(events) and isinstance(events[-1], TurnFinished)
            events[len(events) - ended:len(events) - ended] = [Logprobs(sequence.chat_id, tuple(entries))]
        return events

    def _install_constraint(self, sequence: Sequence, slot: Slot) -> list[Event]:
        """The constraint asked for by constrain_next, from the token after the last one taken in: the
        cache drops whatever the step put in past it (that last token is fed again next step)."""
        assert sequence.pending_constraint is not None
        keep = sequence.length - 1
        if sequence.computed > keep:
            if not self.runner.remove_from(slot.index, keep):
                self.runner.clear_slot(slot.index)
                keep = 0
            sequence.computed = keep
            del slot.cached[keep:]
        (constraint,) = sequence.pending_constraint
        if constraint is not None and not self.runner.constraints_ready():
            return []  # still pending: step() tries again, _plan leaves the turn out meanwhile
        sequence.pending_constraint = None
        try:
            self.runner.set_constraint(slot.index, constraint)
        except ConstraintError as error:
            return self._finish(sequence, "error", str(error))
        return []

    def _settle_draft(self, sequence: Sequence, slot: Slot, drafted: int, accepted: int, now: float) -> None:
        """Count the draft, and drop its rejected tail from the cache."""
        if sequence.speculator is not None:
            sequence.speculator.record(drafted, accepted)
        self.draft_log.append((now, drafted, accepted))
        if accepted == drafted:
            return
        if not self.runner.remove_from(slot.index, sequence.computed):
            # A cache that cannot drop a tail: read the turn again rather than keep wrong tokens.
            self.runner.clear_slot(slot.index)
            slot.cached, sequence.computed = [], 0

    def _accept(self, sequence: Sequence, token: int, now: float) -> list[Event]:
        if sequence.first_token_at is None:
            sequence.first_token_at = now
        params = sequence.params
        if not params.ignore_eos and self.runner.is_end_of_generation(token):
            return self._finish(sequence, "stop")
        sequence.output.append(token)
        self.sampled_log.append((now, sequence.chat_id))
        events = sequence.read(sequence.detokenizer.add(token), now)
        if sequence.stop_string_seen:
            return events + self._finish(sequence, "stop", release=False)
        if sequence.calls_are_done():
            return events + self._finish(sequence, "stop")  # reported as "tool_calls"
        budget = params.reasoning_budget
        if budget is not None and sequence.in_reasoning and sequence.reasoning_tokens >= budget:
            self._close_reasoning(sequence, now)
        constraint = sequence.due_constraint()
        if constraint is not None:
            sequence.constrain_next(constraint)
        if len(sequence.output) >= params.max_new_tokens:
            return events + self._finish(sequence, "length")
        if sequence.length >= self.runner.context_length:
            message = (
                f"The context is full ({self.runner.context_length} tokens): the answer was cut here. "
                "Start a new chat or raise the context length in Settings."
            )
            return events + self._finish(sequence, "context_full", message)
        return events

    def _close_reasoning(self, sequence: Sequence, now: float) -> None:
        """The thinking budget is spent: write the closing marker's tokens into the sequence (fed next
        step, never shown) so that the model answers now."""
        marker = sequence.parser.close_reasoning()
        sequence.reasoning_ended_at = now
        # a grammar that held the thinking never sees the close: the answer's own starts after it
        sequence.answer_due = sequence.answer_constraint is not None
        tokens = self.runner.tokenize(marker)
        start = self.runner.tokenize("")  # the BOS a tokenizer puts before any text
        if start and tokens[: len(start)] == start:
            tokens = tokens[len(start) :]
        sequence.output.extend(tokens)

    # ------------------------------------------------------------ endings

    def _finish(
        self, sequence: Sequence, reason: FinishReason, message: str = "", release: bool = True
    ) -> list[Event]:
        """End the turn; `release` shows what the stop-string check still held back."""
        events: list[Event] = []
        if release and sequence.status is Status.RUNNING:
            events += sequence.release_held()
        calls = tuple(sequence.parser.calls)
        if reason in ("length", "context_full") and sequence.parser.cut_call:
            calls = calls[:-1]  # cut by the token limit: never a finished call with broken arguments
        if calls and reason == "stop":
            reason = "tool_calls"  # the answer ended in calls for the chat's owner to run
        sequence.status, sequence.finish_reason = Status.FINISHED, reason
        sequence.finished_at = time.perf_counter()
        self.slots.release(sequence, sequence.finished_at)
        events.append(TurnFinished(sequence.chat_id, reason, sequence.stats(), sequence.text, message,
                                   sequence.parser.reasoning_text, calls, sequence.stop_string))
        return events

    def _fail(self, sequences: list[Sequence], message: str) -> list[Event]:
        events: list[Event] = []
        for sequence in sequences:
            slot = self.slots.holding(sequence)
            events += self._finish(sequence, "error", message)
            if slot is not None:
                self.slots.forget(slot)  # what the failed step left in its cache is unknown
        return events

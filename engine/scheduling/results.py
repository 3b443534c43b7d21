"""After the step's forward pass: what the sampled tokens do to each turn, and how a turn ends.

Separate from the Scheduler, which decides what runs (the queue, admission, the step's plan),
because this part changes with what a turn's output means: drafted tokens kept or dropped from the
cache, a constraint that begins mid-answer, stop conditions, log-probabilities, and the reason and
tool calls a finished turn reports. The Scheduler owns the logs it appends to (read by the engine's
stats) and passes them in.
"""

from __future__ import annotations

import time
from collections import deque

from engine.constraints import ConstraintError
from engine.protocol import Event, FinishReason, Logprobs, TurnFinished
from engine.runners.base import Runner, SlotWork
from engine.scheduling.cache import cut_cache
from engine.scheduling.plan import Planned
from engine.scheduling.stopping import read_token
from engine.sequence import Sequence, Status
from engine.slots import Slot, SlotTable
from engine.speculative import Source


class StepResults:
    """Takes each step's sampled tokens into their turns, and ends turns (finished, cancelled, failed)."""

    def __init__(self, runner: Runner, slots: SlotTable, sampled_log: deque[tuple[float, str]],
                 draft_log: deque[tuple[float, Source, int, int]]) -> None:
        self.runner = runner
        self.slots = slots
        self.sampled_log = sampled_log
        self.draft_log = draft_log

    def update(self, planned: Planned, sampled: dict[int, list[int]]) -> list[Event]:
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
                self._settle_draft(sequence, slot, work, accepted, now)
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
                events += self.install_constraint(sequence, slot)
                break  # the rest was sampled free: it is sampled again under the constraint
        taken = len(sequence.output) - before
        if sequence.params.logprobs is not None and taken:
            entries = self.runner.step_logprobs(slot.index)[:taken]
            ended = bool(events) and isinstance(events[-1], TurnFinished)
            events[len(events) - ended:len(events) - ended] = [Logprobs(sequence.chat_id, tuple(entries))]
        return events

    def install_constraint(self, sequence: Sequence, slot: Slot) -> list[Event]:
        """The constraint asked for by constrain_next, from the token after the last one taken in: the
        cache drops whatever the step put in past it (that last token is fed again next step)."""
        assert sequence.pending_constraint is not None
        keep = sequence.length - 1
        if sequence.computed > keep:
            sequence.computed = cut_cache(self.runner, slot, keep)
        (constraint,) = sequence.pending_constraint
        if constraint is not None and not self.runner.constraints_ready():
            return []  # still pending: step() tries again, _plan leaves the turn out meanwhile
        sequence.pending_constraint = None
        try:
            self.runner.set_constraint(slot.index, constraint)
        except ConstraintError as error:
            return self.finish(sequence, "error", str(error))
        return []

    def _settle_draft(self, sequence: Sequence, slot: Slot, work: SlotWork, accepted: int, now: float) -> None:
        """Count a guessed draft (a forced one is no guess), and drop its rejected tail from the cache."""
        drafted = len(work.draft)
        if work.forced:
            sequence.forced_tokens += accepted
        else:
            source: Source = "lookup"
            if sequence.speculator is not None:
                sequence.speculator.record(drafted, accepted)
                source = sequence.speculator.source
            self.draft_log.append((now, source, drafted, accepted))
        if accepted == drafted:
            return
        if not self.runner.remove_from(slot.index, sequence.computed):
            # A cache that cannot drop a tail: read the turn again rather than keep wrong tokens.
            self.runner.clear_slot(slot.index)
            slot.cached, sequence.computed = [], 0

    def _accept(self, sequence: Sequence, token: int, now: float) -> list[Event]:
        if sequence.first_token_at is None:
            sequence.first_token_at = now
        if not sequence.params.ignore_eos and self.runner.is_end_of_generation(token):
            return self.finish(sequence, "stop")
        sequence.output.append(token)
        self.sampled_log.append((now, sequence.chat_id))
        events, ending = read_token(sequence, token, now, self.runner)
        return events if ending is None else events + self.finish(sequence, *ending)

    def finish(
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

    def fail(self, sequences: list[Sequence], message: str) -> list[Event]:
        events: list[Event] = []
        for sequence in sequences:
            slot = self.slots.holding(sequence)
            events += self.finish(sequence, "error", message)
            if slot is not None:
                self.slots.forget(slot)  # what the failed step left in its cache is unknown
        return events

"""Continuous batching: which tokens of which chats run in the next step.

Every step is ONE forward pass. Generating sequences contribute one token
each; waiting prompts fill the rest of the token budget in chunks. A chat
keeps its slot's KV cache between turns, so a new turn feeds only what
follows the longest common prefix. With more chats than slots, the least
recently used idle slot is taken over and its chat re-prefills later.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from engine.protocol import (
    Event,
    SamplingParams,
    Token,
    TurnFinished,
    TurnStarted,
)
from engine.runners.base import CacheFull, Runner, RunnerError, SlotWork
from engine.sequence import Sequence, Status, common_prefix_length


# Below this many tokens a copy saves less than it costs to look for.
MIN_SHARED_PREFIX = 16


@dataclass
class Slot:
    index: int
    chat_id: str | None = None  # whose cache this slot holds
    cached: list[int] = field(default_factory=list)  # tokens in the KV cache
    last_used: float = 0.0
    sequence: Sequence | None = None  # the running turn, if any


class Scheduler:
    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.slots = [Slot(i) for i in range(runner.slots)]
        self.waiting: deque[Sequence] = deque()
        self.sampled_log: deque[tuple[float, str]] = deque()  # (time, chat) per token

    # ------------------------------------------------------------ commands

    def submit(self, chat_id: str, prompt: list[int], params: SamplingParams) -> list[Event]:
        events = self.cancel(chat_id)
        sequence = Sequence(chat_id, prompt, params, self.runner.detokenizer())
        limit = self.runner.context_length
        if len(prompt) >= limit:
            message = (
                f"This conversation is {len(prompt)} tokens long, more than the model's context of "
                f"{limit} tokens. Start a new chat, shorten the message, or raise the context length in Settings."
            )
            return events + self._finish(sequence, "error", message)
        self.waiting.append(sequence)
        return events

    def cancel(self, chat_id: str) -> list[Event]:
        events: list[Event] = []
        for sequence in [s for s in self.waiting if s.chat_id == chat_id]:
            self.waiting.remove(sequence)
            events += self._finish(sequence, "cancelled")
        for slot in self.slots:
            if slot.sequence is not None and slot.sequence.chat_id == chat_id:
                events += self._finish(slot.sequence, "cancelled")
        return events

    def close(self, chat_id: str) -> list[Event]:
        events = self.cancel(chat_id)
        for slot in self.slots:
            if slot.chat_id == chat_id:
                self._forget(slot)
        return events

    def cancel_all(self, reason_message: str) -> list[Event]:
        events: list[Event] = []
        for chat_id in {s.chat_id for s in self.running() + list(self.waiting)}:
            for event in self.cancel(chat_id):
                if isinstance(event, TurnFinished):
                    event = TurnFinished(event.chat_id, "cancelled", event.stats, event.text, reason_message)
                events.append(event)
        return events

    # ------------------------------------------------------------ state

    def running(self) -> list[Sequence]:
        return [s.sequence for s in self.slots if s.sequence is not None]

    def has_work(self) -> bool:
        return bool(self.waiting) or any(s.sequence is not None for s in self.slots)

    def slots_busy(self) -> int:
        return sum(1 for s in self.slots if s.sequence is not None)

    # ------------------------------------------------------------ the step

    def step(self) -> list[Event]:
        events = self._admit()
        work = self._plan()
        if not work:
            return events
        try:
            sampled = self._forward(work)
        except RunnerError as error:
            return events + self._fail([s for s in self.running()], str(error))
        return events + self._update(work, sampled)

    def _forward(self, work: list[SlotWork]) -> dict[int, int]:
        try:
            return self.runner.forward(work)
        except CacheFull:
            # Idle chats' caches are the ones to give up; then try once more.
            for slot in self.slots:
                if slot.sequence is None and slot.chat_id is not None:
                    self._forget(slot)
            return self.runner.forward(work)

    def _admit(self) -> list[Event]:
        events: list[Event] = []
        deferred: list[Sequence] = []
        while self.waiting:
            sequence = self.waiting.popleft()
            if self._prefix_being_computed(sequence):
                deferred.append(sequence)  # it will copy that prefix in a step or two
                continue
            slot = self._slot_for(sequence.chat_id)
            if slot is None:
                self.waiting.appendleft(sequence)
                break
            events.append(self._start(sequence, slot))
        self.waiting.extendleft(reversed(deferred))
        return events

    def _prefix_being_computed(self, sequence: Sequence) -> bool:
        """Is a running prompt computing a long start of this one right now?"""
        own = max((common_prefix_length(s.cached, sequence.prompt) for s in self.slots
                   if s.chat_id == sequence.chat_id), default=0)
        for running in self.running():
            shared = min(common_prefix_length(running.prompt, sequence.prompt), len(sequence.prompt) - 1)
            if shared >= own + MIN_SHARED_PREFIX and running.computed < shared:
                return True
        return False

    def _slot_for(self, chat_id: str) -> Slot | None:
        idle = [s for s in self.slots if s.sequence is None]
        for slot in idle:
            if slot.chat_id == chat_id:
                return slot
        free = [s for s in idle if s.chat_id is None]
        if free:
            return free[0]
        if idle:
            least_recent = min(idle, key=lambda s: s.last_used)
            self._forget(least_recent)
            return least_recent
        return None

    def _start(self, sequence: Sequence, slot: Slot) -> TurnStarted:
        reuse = min(common_prefix_length(slot.cached, sequence.prompt), len(sequence.prompt) - 1)
        donor, shared = self._donor_for(sequence.prompt, slot)
        if donor is not None and shared >= reuse + MIN_SHARED_PREFIX:
            # Another slot already computed a longer start of this prompt (a shared
            # system prompt, the same question in two tabs): share it, don't recompute it.
            if self.runner.copy_prefix(donor.index, slot.index, shared):
                slot.cached, reuse = donor.cached[:shared], shared
            else:
                self.runner.clear_slot(slot.index)
                slot.cached, reuse = [], 0
        elif reuse < len(slot.cached):
            if not self.runner.remove_from(slot.index, reuse):
                # Sliding-window or recurrent caches can't drop a tail: start clean.
                self.runner.clear_slot(slot.index)
                reuse = 0
            del slot.cached[reuse:]
        slot.chat_id, slot.sequence = sequence.chat_id, sequence
        sequence.slot, sequence.status = slot.index, Status.RUNNING
        sequence.computed = sequence.reused = reuse
        self.runner.begin_turn(slot.index, sequence.params)
        return TurnStarted(sequence.chat_id, len(sequence.prompt), reuse)

    def _donor_for(self, prompt: list[int], target: Slot) -> tuple[Slot | None, int]:
        best, best_length = None, 0
        for slot in self.slots:
            if slot is not target and slot.cached:
                length = min(common_prefix_length(slot.cached, prompt), len(prompt) - 1)
                if length > best_length:
                    best, best_length = slot, length
        return best, best_length

    def _plan(self) -> list[SlotWork]:
        budget = self.runner.batch_tokens
        running = sorted(self.running(), key=lambda s: (s.uncomputed > 1, s.submitted_at))
        work: list[SlotWork] = []
        for sequence in running:
            if budget <= 0:
                break
            count = min(sequence.uncomputed, budget)
            if count <= 0:
                continue
            start = sequence.computed
            tokens = sequence.tokens_between(start, start + count)
            work.append(SlotWork(sequence.slot or 0, tokens, start, start + count == sequence.length))
            budget -= count
        return work

    def _update(self, work: list[SlotWork], sampled: dict[int, int]) -> list[Event]:
        events: list[Event] = []
        now = time.perf_counter()
        for item in work:
            slot = self.slots[item.slot]
            sequence = slot.sequence
            slot.cached.extend(item.tokens)
            slot.last_used = now
            if sequence is None:
                continue
            sequence.computed += len(item.tokens)
            if item.sample and item.slot in sampled:
                events += self._accept(sequence, sampled[item.slot], now)
        return events

    def _accept(self, sequence: Sequence, token: int, now: float) -> list[Event]:
        if sequence.first_token_at is None:
            sequence.first_token_at = now
        params = sequence.params
        if not params.ignore_eos and self.runner.is_end_of_generation(token):
            return self._finish(sequence, "stop")
        sequence.output.append(token)
        self.sampled_log.append((now, sequence.chat_id))
        shown = sequence.take_text(sequence.detokenizer.add(token))
        events: list[Event] = [Token(sequence.chat_id, shown)] if shown else []
        if sequence.finish_reason == "stop":
            return events + self._finish(sequence, "stop", release=False)
        if len(sequence.output) >= params.max_new_tokens:
            return events + self._finish(sequence, "length")
        if sequence.length >= self.runner.context_length:
            message = (
                f"The context is full ({self.runner.context_length} tokens): the answer was cut here. "
                "Start a new chat or raise the context length in Settings."
            )
            return events + self._finish(sequence, "context_full", message)
        return events

    # ------------------------------------------------------------ endings

    def _finish(self, sequence: Sequence, reason, message: str = "", release: bool = True) -> list[Event]:
        events: list[Event] = []
        if release and sequence.status is Status.RUNNING:
            tail = sequence.release_held()
            if tail:
                events.append(Token(sequence.chat_id, tail))
        sequence.status, sequence.finish_reason = Status.FINISHED, reason
        sequence.finished_at = time.perf_counter()
        if sequence.slot is not None:
            self.slots[sequence.slot].sequence = None
            self.slots[sequence.slot].last_used = sequence.finished_at
        events.append(TurnFinished(sequence.chat_id, reason, sequence.stats(), sequence.text, message))
        return events

    def _fail(self, sequences: list[Sequence], message: str) -> list[Event]:
        events: list[Event] = []
        for sequence in sequences:
            if sequence.slot is not None:
                self._forget(self.slots[sequence.slot])
            events += self._finish(sequence, "error", message)
        return events

    def _forget(self, slot: Slot) -> None:
        self.runner.clear_slot(slot.index)
        slot.chat_id, slot.cached = None, []

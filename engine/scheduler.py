"""Continuous batching: which tokens of which chats run in the next step.

Every step is ONE forward pass. Generating sequences contribute one token
each; waiting prompts fill the rest of the token budget in chunks. A chat
keeps its slot's KV cache between turns, so a new turn feeds only what
follows the longest common prefix. With more chats than slots, the least
recently used idle slot is taken over and its chat re-prefills later; which
slot holds what is the slot table's business (engine/slots.py).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace

from engine.protocol import (
    Event,
    FinishReason,
    SamplingParams,
    Token,
    TurnFinished,
    TurnStarted,
)
from engine.runners.base import CacheFull, Runner, RunnerError, SlotWork
from engine.sequence import Sequence, Status, common_prefix_length
from engine.slots import MIN_SHARED_PREFIX, Slot, SlotTable


class Scheduler:
    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.slots = SlotTable(runner.slots, runner.clear_slot)
        self.waiting: deque[Sequence] = deque()
        self.sampled_log: deque[tuple[float, str]] = deque()  # (time, chat) per token

    # ------------------------------------------------------------ commands

    def submit(self, chat_id: str, prompt: list[int], params: SamplingParams) -> list[Event]:
        events = self.cancel(chat_id)
        if self.runner.end_markers and not params.ignore_eos:
            params = replace(params, stop=params.stop + self.runner.end_markers)
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
                    event = TurnFinished(event.chat_id, "cancelled", event.stats, event.text, reason_message)
                events.append(event)
        return events

    # ------------------------------------------------------------ state

    def running(self) -> list[Sequence]:
        return [sequence for _, sequence in self.slots.running()]

    def has_work(self) -> bool:
        return bool(self.waiting) or self.slots.busy() > 0

    def slots_busy(self) -> int:
        return self.slots.busy()

    # ------------------------------------------------------------ the step

    def step(self) -> list[Event]:
        events = self._admit()
        planned = self._plan()
        if not planned:
            return events
        try:
            sampled = self._forward([work for _, work in planned])
        except RunnerError as error:
            return events + self._fail(self.running(), str(error))
        return events + self._update(planned, sampled)

    def _forward(self, work: list[SlotWork]) -> dict[int, int]:
        try:
            return self.runner.forward(work)
        except CacheFull:
            # Idle chats' caches are the ones to give up; then try once more.
            self.slots.forget_idle()
            return self.runner.forward(work)

    def _admit(self) -> list[Event]:
        events: list[Event] = []
        deferred: list[Sequence] = []
        while self.waiting:
            sequence = self.waiting.popleft()
            if self.slots.prefix_being_computed(sequence):
                deferred.append(sequence)  # it will copy that prefix in a step or two
                continue
            slot = self.slots.slot_for(sequence.chat_id, sequence.prompt)
            if slot is None:
                self.waiting.appendleft(sequence)
                break
            events.append(self._start(sequence, slot))
        self.waiting.extendleft(reversed(deferred))
        return events

    def _start(self, sequence: Sequence, slot: Slot) -> TurnStarted:
        reuse = self._reuse_cache(sequence.prompt, slot)
        self.slots.occupy(slot, sequence)
        sequence.status = Status.RUNNING
        sequence.computed = sequence.reused = reuse
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
        """Decode tokens first, then prompt chunks in arrival order, within the step's token budget."""
        budget = self.runner.batch_tokens
        running = sorted(self.slots.running(), key=lambda pair: (pair[1].uncomputed > 1, pair[1].submitted_at))
        planned: list[tuple[Sequence, SlotWork]] = []
        for slot, sequence in running:
            if budget <= 0:
                break
            count = min(sequence.uncomputed, budget)
            if count <= 0:
                continue
            start = sequence.computed
            tokens = sequence.tokens_between(start, start + count)
            planned.append((sequence, SlotWork(slot.index, tokens, start, start + count == sequence.length)))
            budget -= count
        return planned

    def _update(self, planned: list[tuple[Sequence, SlotWork]], sampled: dict[int, int]) -> list[Event]:
        events: list[Event] = []
        now = time.perf_counter()
        for sequence, work in planned:
            slot = self.slots[work.slot]
            slot.cached.extend(work.tokens)
            slot.last_used = now
            sequence.computed += len(work.tokens)
            if work.sample and work.slot in sampled:
                events += self._accept(sequence, sampled[work.slot], now)
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
        if sequence.stop_string_seen:
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

    def _finish(
        self, sequence: Sequence, reason: FinishReason, message: str = "", release: bool = True
    ) -> list[Event]:
        """End the turn; `release` shows what the stop-string check still held back."""
        events: list[Event] = []
        if release and sequence.status is Status.RUNNING:
            tail = sequence.release_held()
            if tail:
                events.append(Token(sequence.chat_id, tail))
        sequence.status, sequence.finish_reason = Status.FINISHED, reason
        sequence.finished_at = time.perf_counter()
        self.slots.release(sequence, sequence.finished_at)
        events.append(TurnFinished(sequence.chat_id, reason, sequence.stats(), sequence.text, message))
        return events

    def _fail(self, sequences: list[Sequence], message: str) -> list[Event]:
        events: list[Event] = []
        for sequence in sequences:
            slot = self.slots.holding(sequence)
            events += self._finish(sequence, "error", message)
            if slot is not None:
                self.slots.forget(slot)  # what the failed step left in its cache is unknown
        return events

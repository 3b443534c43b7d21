"""Continuous batching: which tokens of which chats run in the next step.

Every step is ONE forward pass. Generating sequences contribute one token
each; waiting prompts fill the rest of the token budget in chunks. A chat
keeps its slot's KV cache between turns, so a new turn feeds only what
follows the longest common prefix. With more chats than slots, the least
recently used idle slot is taken over and its chat re-prefills later; which
slot holds what is the slot table's business (engine/slots.py).

A generating chat may also feed a draft of guessed next tokens (prompt
lookup, or this model's shared n-gram pool: engine/speculative.py) in the same pass; the runner returns the ones
its sampler agreed with plus its own next token, and the scheduler drops the
rejected rest from the cache and applies stop strings, the token limit and
the context's end to each accepted token in turn, exactly as if they had come
one per step.

A constrained turn waits (in the queue, or paused where its grammar starts mid-answer) while the
runner builds what constraints need on a worker thread (Runner.constraints_ready): the other chats
keep stepping meanwhile. A turn whose grammar may start mid-answer (tools offered, an answer's grammar after
the thinking) asks for that build when it is submitted (Runner.prepare_constraints: where a core is spare).

The Scheduler holds the queue, the slots and the turns' lives; the parts that change for their own
reasons are in engine/scheduling/: the turn made from a request (request.py), the step's plan
(plan.py), the cache a new turn keeps (cache.py), what the step's tokens do to their turns and how
a turn ends (results.py), and what each sampled token does (stopping.py).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import replace

from engine.constraints import ConstraintError
from engine.ngram_pool import NgramPool
from engine.parsing.prompt import TurnSetup
from engine.protocol import Constraint, Event, SamplingParams, TurnFinished, TurnStarted
from engine.runners.base import Runner, RunnerError, SlotWork, drafter_of
from engine.scheduling.cache import reuse_cache
from engine.scheduling.plan import plan_step
from engine.scheduling.request import new_turn
from engine.scheduling.results import StepResults
from engine.sequence import Sequence, Status
from engine.slots import Slot, SlotTable
from engine.speculative import Source, Speculator
from engine.step_cost import StepCost

CONSTRAINTS_WAIT_S = 0.05  # how long an idle step waits for the constraints' tokenizer before looking again


class Scheduler:
    def __init__(self, runner: Runner, step_cost: StepCost | None = None, ngram_pool: bool = True) -> None:
        self.runner = runner
        # At most this many prompt tokens a step (None: what the batch leaves); the engine sets it while
        # another model's chats stream, so this model's long prompt comes in smaller chunks between their steps.
        self.prompt_tokens_cap: int | None = None
        self.slots = SlotTable(runner.slots, runner.clear_slot)
        self.waiting: deque[Sequence] = deque()
        self.sampled_log: deque[tuple[float, str]] = deque()  # (time, chat) per token
        self.draft_log: deque[tuple[float, Source, int, int]] = deque()  # (time, source, drafted, accepted) per draft
        self.step_cost = step_cost or StepCost()  # what drafts cost on this machine, from the steps' timings
        # This model's chats' n-grams, for drafts where a chat's own context has none (engine/ngram_pool.py)
        self.ngram_pool = NgramPool() if ngram_pool else None
        self._results = StepResults(runner, self.slots, self.sampled_log, self.draft_log)

    # ------------------------------------------------------------ commands

    def submit(self, chat_id: str, prompt: list[int], params: SamplingParams,
               setup: TurnSetup | None = None) -> list[Event]:
        """`setup` says how to read the output (engine/parsing/prompt.py); None: the model's plain format."""
        events = self.cancel(chat_id)
        sequence, error = new_turn(self.runner, chat_id, prompt, params, setup)
        if error:
            return events + self._results.finish(sequence, "error", error)
        if sequence.setup.tools is not None or sequence.answer_constraint is not None:
            self.runner.prepare_constraints()
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
            events += self._results.finish(sequence, "cancelled")
        for sequence in [s for s in self.running() if s.chat_id == chat_id]:
            events += self._results.finish(sequence, "cancelled")
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
                events += self._results.install_constraint(sequence, slot)
        planned = plan_step(self.slots, self.runner, self.step_cost, self.prompt_tokens_cap)
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
            return events + self._results.fail(self.running(), str(error))
        self._time_step([work for _, work in planned], time.perf_counter() - started)
        return events + self._results.update(planned, sampled)

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
                events += self._results.finish(sequence, "error", str(error))
        self.waiting.extendleft(reversed(deferred))
        return events

    def _start(self, sequence: Sequence, slot: Slot) -> TurnStarted:
        reuse = reuse_cache(self.runner, self.slots, sequence.prompt, slot)
        self.slots.occupy(slot, sequence)
        sequence.status = Status.RUNNING
        sequence.computed = sequence.reused = reuse
        if sequence.params.speculative != "off" and self.runner.can_draft:
            repeatable = sequence.params.greedy or sequence.params.seed is not None
            sequence.speculator = Speculator(self.runner.is_end_of_generation, self.ngram_pool,
                                             pool_drafts=not repeatable, model_drafts=drafter_of(self.runner) is not None)
        self.runner.begin_turn(slot.index, sequence.params)
        return TurnStarted(sequence.chat_id, len(sequence.prompt), reuse)

"""Each slot's constraint matcher, and a step's token masks computed while the forward pass runs.

A runner keeps one SlotConstraints. Before its forward pass it starts the masks of every constrained
slot that samples this step (`start_masks`): llguidance fills them in parallel on its own threads,
from a Python thread of ours that holds no GIL while it waits, so llama_decode or torch (which drop
the GIL too) run at the same time and unconstrained chats do not wait for the masks. A slot with a
draft gets one mask per row: the next token's, then the one after each draft token in turn (the
matcher advanced over the draft and rolled back), so a drafted token the constraint forbids can
never be sampled and is rejected like any other mismatch.

llguidance's view of the vocabulary takes seconds to build (2 s for a 49k vocabulary, 13 s for 128k):
`ready()` builds it on a worker thread of its own, so the engine keeps stepping the other chats while
a constrained one waits (the scheduler holds it back until `ready()` says so).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from llguidance import LLExecutor, LLMatcher, LLTokenizer
from llguidance.numpy import (
    fill_next_token_bitmask,
    fill_next_token_bitmask_par,
    fill_next_token_bitmask_par_with_draft_tokens,
)

from engine.constraints.grammar import ConstraintError, grammar_for
from engine.protocol import Constraint

COMPILED_KEPT = 32  # compiled grammars kept per tokenizer: a chat's next turn reuses its schema's


@dataclass
class _Rows:
    first: int  # the slot's first row in the step's masks
    count: int


class SlotConstraints:
    """What each slot's samples must match; `tokenizer` is built on first use, off the engine thread
    where `ready()` is asked first."""

    def __init__(self, tokenizer: Callable[[], LLTokenizer], n_vocab: int) -> None:
        self._make_tokenizer = tokenizer
        self._tokenizer: LLTokenizer | None = None
        self.n_vocab = n_vocab
        self._matchers: dict[int, LLMatcher] = {}
        self._compiled: dict[Constraint, LLMatcher] = {}
        self._executor: LLExecutor | None = None
        self._masks = np.zeros((0, _words(n_vocab)), dtype=np.int32)
        self._rows: dict[int, _Rows] = {}
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None
        self._building: threading.Thread | None = None
        self._build_error: ConstraintError | None = None

    # ------------------------------------------------------------ per slot

    def set(self, slot: int, constraint: Constraint | None) -> None:
        """From the slot's next sample on, keep its tokens to `constraint` (None: free)."""
        self._matchers.pop(slot, None)
        if constraint is not None:
            self._matchers[slot] = self._compile(constraint).deep_copy()

    def active(self, slot: int) -> bool:
        return slot in self._matchers

    def any_active(self) -> bool:
        return bool(self._matchers)

    def consume(self, slot: int, tokens: Sequence[int], end_of_generation: Callable[[int], bool]) -> None:
        """The tokens the slot got this step, up to an end-of-generation token (the turn ends there)."""
        matcher = self._matchers.get(slot)
        if matcher is None:
            return
        for token in tokens:
            if end_of_generation(token) or not matcher.consume_token(token):
                break

    def _compile(self, constraint: Constraint) -> LLMatcher:
        compiled = self._compiled.get(constraint)
        if compiled is None:
            matcher = LLMatcher(self.tokenizer(), grammar_for(constraint), log_level=0)
            if matcher.is_error():
                raise ConstraintError(f"The constraint cannot be used with this model: {matcher.get_error()}")
            if len(self._compiled) >= COMPILED_KEPT:
                del self._compiled[next(iter(self._compiled))]
            compiled = self._compiled[constraint] = matcher
        return compiled

    def ready(self, wait: float = 0.0) -> bool:
        """True when a constraint can be set at once; the first call starts building the tokenizer on a
        worker thread. `wait`: seconds to wait for it. A build that failed counts as ready: set() then
        raises its ConstraintError, and the turn ends with it."""
        if self._tokenizer is not None or self._build_error is not None:
            return True
        if self._building is None:
            self._building = threading.Thread(target=self._build, name="constraint-tokenizer", daemon=True)
            self._building.start()
        if wait > 0:
            self._building.join(wait)
        return self._tokenizer is not None or self._build_error is not None

    def _build(self) -> None:
        try:
            self._tokenizer = self._make_tokenizer()
        except (ValueError, TypeError, RuntimeError) as error:  # llguidance.hf: "Only fast tokenizers ..."
            self._build_error = ConstraintError(f"Constrained decoding cannot read this model's vocabulary: {error}")

    def tokenizer(self) -> LLTokenizer:
        if self._tokenizer is None and self._build_error is None:
            if self._building is None:
                self._build()  # nobody asked ready() first: build it here
            else:
                self._building.join()
        if self._build_error is not None:
            raise self._build_error
        assert self._tokenizer is not None
        return self._tokenizer

    # ------------------------------------------------------------ a step's masks

    def start_masks(self, wanted: Sequence[tuple[int, Sequence[int]]], concurrent: bool = True) -> None:
        """Begin the masks of these (slot, draft) pairs, constrained or not (the free ones are skipped).

        `concurrent` False fills them here and now, before the forward pass: where the pass keeps every
        core busy, a mask thread beside it stalls all of the pass's threads at their next barrier
        (measured on 2 cores, 4 constrained tabs: 0.77-0.82x free concurrently, 0.94-0.96x first)."""
        self.wait_masks()
        self._rows = {}
        jobs: list[tuple[LLMatcher, int, list[int]]] = []
        first = 0
        for slot, draft in wanted:
            matcher = self._matchers.get(slot)
            if matcher is not None:
                self._rows[slot] = _Rows(first, 1 + len(draft))
                jobs.append((matcher, first, list(draft)))
                first += 1 + len(draft)
        if not jobs:
            return
        if self._masks.shape[0] < first:
            self._masks = np.zeros((max(first, 2 * self._masks.shape[0]), _words(self.n_vocab)), dtype=np.int32)
        # Rows past a forbidden draft token, or past a drafted end of generation, are left as they are:
        # all allowed. None is sampled from under the constraint (sampling stops at the rejection, the
        # turn at its end), and an empty row would leave a sampler nothing to draw from.
        self._masks[:first] = -1
        self._failure = None
        if not concurrent and not any(draft for _, _, draft in jobs):
            for matcher, row, _ in jobs:  # here, one after another: no thread pool to wake beside the pass
                fill_next_token_bitmask(matcher, self._masks, row)
            return
        self._thread = threading.Thread(target=self._fill, args=(jobs,), name="constraint-masks", daemon=True)
        self._thread.start()
        if not concurrent:
            self.wait_masks()

    def _fill(self, jobs: list[tuple[LLMatcher, int, list[int]]]) -> None:
        try:
            if self._executor is None:
                self._executor = LLExecutor()
            plain = [(matcher, first) for matcher, first, draft in jobs if not draft]
            drafted = [job for job in jobs if job[2]]
            if plain:
                fill_next_token_bitmask_par(self._executor, plain, self._masks)
            if drafted:  # llguidance wants these apart: it refuses an empty draft
                fill_next_token_bitmask_par_with_draft_tokens(self._executor, drafted, self._masks)
        except BaseException as error:  # handed to the engine thread by wait_masks
            self._failure = error

    def wait_masks(self) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def allowed(self, slot: int, offset: int) -> np.ndarray | None:
        """The tokens the slot may sample at row `offset` of its rows this step (bools); None: any."""
        rows = self._rows.get(slot)
        if rows is None or offset >= rows.count:
            return None
        words = self._masks[rows.first + offset]
        return np.unpackbits(words.view(np.uint8), bitorder="little")[: self.n_vocab].astype(bool)


def spare_core(threads: int) -> bool:
    """Whether a forward pass on `threads` CPU threads leaves a core for the masks to fill beside it."""
    return threads < (os.cpu_count() or 1)


def _words(n_vocab: int) -> int:
    return (n_vocab + 31) // 32

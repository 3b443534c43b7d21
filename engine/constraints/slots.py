"""Each slot's constraint matcher, and a step's token masks computed while the forward pass runs.

A runner keeps one SlotConstraints. Before its forward pass it starts the masks of every constrained
slot that samples this step (`start_masks`): they fill on the mask thread (overlap.py), one matcher
directly, several in parallel on llguidance's pool, with the GIL dropped, while llama_decode or torch
(which drop it too) run; unconstrained chats do not wait for them. A slot with a draft gets one mask
per row: the next token's, then the one after each draft token in turn (the matcher advanced over the
draft and rolled back), so a drafted token the constraint forbids can never be sampled and is
rejected like any other mismatch.

llguidance's view of the vocabulary takes seconds to build (2 s for a 49k vocabulary, 13 s for 128k):
`ready()` builds it on a worker thread of its own, so the engine keeps stepping the other chats while
a constrained one waits (the scheduler holds it back until `ready()` says so).
"""

from __future__ import annotations

import os
import threading
import time
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
from engine.constraints.overlap import MaskWorker, OverlapChoice
from engine.protocol import Constraint

COMPILED_KEPT = 32  # compiled grammars kept per tokenizer: a chat's next turn reuses its schema's


@dataclass
class _Rows:
    first: int  # the slot's first row in the step's masks
    count: int
    draft: list[int]
    filled: bool  # every row filled at once (else a draft row's when it is asked for)


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
        self._penalties = np.zeros((0, n_vocab), dtype=np.uint32)  # the masks as float32 0 / -inf bits
        self._penalty_ready: set[int] = set()  # rows whose penalty the mask thread wrote this step
        self._rows: dict[int, _Rows] = {}
        self._worker: MaskWorker | None = None
        self.overlap = OverlapChoice()
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

        `concurrent`: on the mask thread, beside the forward pass, each slot's first row also turned into
        the 0 / -inf row forbid() adds, so that after the pass only the addition is left. False fills
        them here and now, before the pass (where the pass keeps every core busy, a thread beside it
        stalls the pass's threads at their barriers: OverlapChoice), and a draft row's mask only when
        sampling reaches it (most drafts end at their first token)."""
        self.wait_masks()
        self._rows, self._penalty_ready = {}, set()
        jobs: list[tuple[LLMatcher, int, list[int]]] = []
        first = 0
        for slot, draft in wanted:
            matcher = self._matchers.get(slot)
            if matcher is not None:
                self._rows[slot] = _Rows(first, 1 + len(draft), list(draft), concurrent)
                jobs.append((matcher, first, list(draft)))
                first += 1 + len(draft)
        if not jobs:
            return
        if self._masks.shape[0] < first:
            rows = max(first, 2 * self._masks.shape[0])
            self._masks = np.zeros((rows, _words(self.n_vocab)), dtype=np.int32)
            self._penalties = np.zeros((rows, self.n_vocab), dtype=np.uint32)
        # Rows past a forbidden draft token, or past a drafted end of generation, are left as they are:
        # all allowed. None is sampled from under the constraint (sampling stops at the rejection, the
        # turn at its end), and an empty row would leave a sampler nothing to draw from.
        self._masks[:first] = -1
        if not concurrent:
            started = time.perf_counter()
            for matcher, row, _ in jobs:  # here, one after another: no thread to wake beside the pass
                fill_next_token_bitmask(matcher, self._masks, row)
            self.overlap.record_masks(time.perf_counter() - started)
            return
        if self._worker is None:
            self._worker = MaskWorker()
        self._worker.submit(lambda: self._fill(jobs))

    def _fill(self, jobs: list[tuple[LLMatcher, int, list[int]]]) -> None:
        started = time.perf_counter()
        plain = [(matcher, first) for matcher, first, draft in jobs if not draft]
        drafted = [job for job in jobs if job[2]]
        if len(plain) == 1 and not drafted:  # one matcher: no hop to llguidance's thread pool and back
            fill_next_token_bitmask(plain[0][0], self._masks, plain[0][1])
        elif plain:  # several: in parallel, on llguidance's pool
            if self._executor is None:
                self._executor = LLExecutor()
            fill_next_token_bitmask_par(self._executor, plain, self._masks)
        if drafted:  # llguidance wants these apart: it refuses an empty draft
            if self._executor is None:
                self._executor = LLExecutor()
            fill_next_token_bitmask_par_with_draft_tokens(self._executor, drafted, self._masks)
        self.overlap.record_masks(time.perf_counter() - started)
        for _, first, _ in jobs:  # each slot's first row is sampled for sure: its additive row now
            self._penalty_row(first)
        self._penalty_ready = {first for _, first, _ in jobs}

    def wait_masks(self) -> None:
        """Until the step's masks are filled; a failure on the mask thread is raised here."""
        if self._worker is not None:
            self._worker.wait()

    def close(self) -> None:
        """The mask thread ends (a step after this starts a new one)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()

    def allowed(self, slot: int, offset: int) -> np.ndarray | None:
        """The tokens the slot may sample at row `offset` of its rows this step (bools); None: any."""
        row = self._row(slot, offset)
        if row is None:
            return None
        return np.unpackbits(self._masks[row].view(np.uint8), bitorder="little")[: self.n_vocab].astype(bool)

    def forbid(self, slot: int, offset: int, logits: np.ndarray) -> bool:
        """Set the tokens the slot may not sample at row `offset` to -inf in `logits` (float32, in place);
        False: the row is free. The mask's bits become 0.0 or -inf and are added, which numpy vectorizes:
        a masked copy (np.copyto where=) branches per token, 340-790 us against 80-100 us on a 152k
        vocabulary where most tokens are allowed (inside a JSON string), measured here."""
        row = self._row(slot, offset)
        if row is None:
            return False
        if row not in self._penalty_ready:
            self._penalty_row(row)
        np.add(logits, self._penalties[row].view(np.float32), out=logits)
        return True

    def _row(self, slot: int, offset: int) -> int | None:
        """The step's mask row of the slot's `offset`-th sample, filled by now; None: the row is free."""
        rows = self._rows.get(slot)
        if rows is None or offset >= rows.count:
            return None
        if offset and not rows.filled:
            self._fill_draft_row(slot, rows, offset)
        return rows.first + offset

    def _fill_draft_row(self, slot: int, rows: _Rows, offset: int) -> None:
        """The mask after the slot's first `offset` draft tokens, filled now (they were sampled: the
        constraint allowed each), as llguidance fills it beside the pass."""
        matcher = self._matchers[slot]
        taken = matcher.try_consume_tokens(rows.draft[:offset])
        try:
            if taken == offset:
                fill_next_token_bitmask(matcher, self._masks, rows.first + offset)
        finally:
            matcher.rollback(taken)

    def _penalty_row(self, row: int) -> None:
        """Row `row`'s mask as float32 bits to add to logits: allowed 0.0, forbidden -inf."""
        bits = np.unpackbits(self._masks[row].view(np.uint8), bitorder="little")[: self.n_vocab]
        penalty = self._penalties[row]
        np.subtract(bits, 1, out=penalty, dtype=np.uint32, casting="unsafe")  # allowed 0, forbidden all ones
        np.bitwise_and(penalty, NEGATIVE_INFINITY_BITS, out=penalty)


NEGATIVE_INFINITY_BITS = np.uint32(0xFF800000)  # float32 -inf


def spare_core(threads: int) -> bool:
    """Whether a forward pass on `threads` CPU threads leaves a core for the masks to fill beside it."""
    return threads < (os.cpu_count() or 1)


def _words(n_vocab: int) -> int:
    return (n_vocab + 31) // 32

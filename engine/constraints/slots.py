"""Each slot's constraint matcher, and a step's token masks computed while the forward pass runs.

A runner keeps one SlotConstraints. Before its forward pass it starts the masks of every constrained
slot that samples this step (`start_masks`): they fill on the mask thread (overlap.py), one matcher
directly, several in parallel on llguidance's pool, with the GIL dropped, while llama_decode or torch
(which drop it too) run; unconstrained chats do not wait for them. Where the pass takes every core
they fill after it instead, row by row as sampling reaches them, and a greedy sample (`best`) asks
the matcher about its best tokens first: one the constraint allows (2 us to ask) needs no mask (an
average 260 us on a 152k-token vocabulary). A slot with a draft gets one mask per row: the next
token's, then the one after each draft token in turn (the matcher advanced over the draft and rolled
back), so a drafted token the constraint forbids is rejected like any other mismatch. Tokens the
constraint forces come as the draft (`forced`, forced.py): a greedy row there is its forced token.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Sequence

import numpy as np
from llguidance import LLExecutor, LLMatcher, LLTokenizer
from llguidance.numpy import (
    fill_next_token_bitmask,
    fill_next_token_bitmask_par,
    fill_next_token_bitmask_par_with_draft_tokens,
)

from engine.constraints import bits
from engine.constraints.draft_rows import SlotRows, ask, past_draft
from engine.constraints.forced import ForcedRuns
from engine.constraints.grammar import grammar_for
from engine.constraints.overlap import MaskWorker, OverlapChoice
from engine.constraints.vocabulary import VocabularyBuild
from engine.protocol import Constraint

GREEDY_TRIES = 8  # best tokens a greedy sample asks the matcher about before it fills the row's mask


class SlotConstraints:
    """What each slot's samples must match; `tokenizer` is built on first use, off the engine thread
    where `ready()` is asked first."""

    def __init__(self, tokenizer: Callable[[], LLTokenizer], n_vocab: int) -> None:
        self._vocabulary = VocabularyBuild(tokenizer)
        self.n_vocab = n_vocab
        self._matchers: dict[int, LLMatcher] = {}
        self._executor: LLExecutor | None = None
        self._masks = np.zeros((0, bits.words(n_vocab)), dtype=np.int32)
        self._penalties = np.zeros((0, n_vocab), dtype=np.uint32)  # the masks as float32 0 / -inf bits
        self._penalty_ready: set[int] = set()  # rows whose penalty the mask thread wrote this step
        self._filled_late: set[int] = set()  # rows filled this step as sampling reached them
        self._late_s = 0.0  # their fill time this step, for OverlapChoice
        self._rows: dict[int, SlotRows] = {}
        self._forced = ForcedRuns(n_vocab)  # each slot's `forced` tokens for the next step
        self._worker: MaskWorker | None = None
        self.overlap = OverlapChoice()

    # ------------------------------------------------------------ per slot

    def set(self, slot: int, constraint: Constraint | None) -> None:
        """From the slot's next sample on, keep its tokens to `constraint` (None: free)."""
        self._matchers.pop(slot, None)
        self._forced.drop(slot)
        if constraint is not None:
            self._matchers[slot] = self._vocabulary.compile(constraint, grammar_for(constraint)).deep_copy()

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

    def forced(self, slot: int, limit: int, is_end: Callable[[int], bool]) -> list[int]:
        """Up to `limit` tokens the slot's constraint forces next (forced.py); where the next step feeds them as
        the slot's draft, their rows are taken as sampled without a mask."""
        matcher = self._matchers.get(slot)
        return self._forced.walk(slot, matcher, limit, is_end) if matcher is not None and limit > 0 else []

    def forces(self, slot: int, draft: Sequence[int]) -> bool:
        """Whether `draft` is (the start of) what the slot's constraint forces next: its rows are then taken
        as sampled, the forced tokens, and only its last row needs logits."""
        return self._forced.forces(slot, draft)

    def forced_at(self, slot: int, offset: int) -> int | None:
        """The token forced at row `offset` of the slot's rows this step (None: the row samples)."""
        rows = self._rows.get(slot)
        return rows.draft[offset] if rows is not None and offset < rows.forced else None

    def ready(self, wait: float = 0.0) -> bool:
        """True when a constraint can be set at once (VocabularyBuild.ready); a failed build counts as
        ready: set() then raises its ConstraintError, and the turn ends with it."""
        return self._vocabulary.ready(wait)

    @property
    def started(self) -> bool:
        """Whether the vocabulary's build has begun (VocabularyBuild.started)."""
        return self._vocabulary.started

    def tokenizer(self) -> LLTokenizer:
        return self._vocabulary.get()

    # ------------------------------------------------------------ a step's masks

    def start_masks(self, wanted: Sequence[tuple[int, Sequence[int]]], concurrent: bool = True) -> None:
        """Begin the masks of these (slot, draft) pairs, constrained or not (the free ones are skipped).

        `concurrent`: on the mask thread, beside the forward pass, each slot's first row also turned into
        the 0 / -inf row forbid() adds, so that after the pass only the addition is left. False fills
        each row only when sampling reaches it, after the pass (where the pass keeps every core busy, a
        thread beside it stalls the pass's threads at their barriers: OverlapChoice): most drafts end at
        their first token, and a greedy sample the constraint allows needs no mask at all."""
        self.wait_masks()
        if self._rows and not any(rows.filled for rows in self._rows.values()):
            self.overlap.record_masks(self._late_s, beside=False)  # the last step's, as sampling asked
        self._rows, self._penalty_ready, self._filled_late, self._late_s = {}, set(), set(), 0.0
        jobs: list[tuple[LLMatcher, int, list[int]]] = []
        known: list[tuple[int, np.ndarray]] = []  # (row, its mask) from `forced`'s walk
        first = 0
        for slot, draft in wanted:
            matcher = self._matchers.get(slot)
            if matcher is not None:
                # a forced draft's rows are its tokens and its last row's mask is known or a forced row's
                # (15-25 us): it fills when sampled, never on the mask thread
                cut, after = self._forced.forces(slot, draft), self._forced.after(slot, draft)
                self._rows[slot] = SlotRows(first, 1 + len(draft), list(draft), concurrent and not cut,
                                            len(draft) if cut else 0)
                if after is not None:
                    known.append((first + len(draft), after))
                if not cut:
                    jobs.append((matcher, first, list(draft)))
                first += 1 + len(draft)
        self._forced.clear()
        if not first:
            return
        if self._masks.shape[0] < first:
            rows = max(first, 2 * self._masks.shape[0])
            self._masks = np.zeros((rows, bits.words(self.n_vocab)), dtype=np.int32)
            self._penalties = np.zeros((rows, self.n_vocab), dtype=np.uint32)
        # Rows past a forbidden draft token, or past a drafted end of generation, are left as they are:
        # all allowed. None is sampled from under the constraint (sampling stops at the rejection, the
        # turn at its end), and an empty row would leave a sampler nothing to draw from.
        self._masks[:first] = -1
        for row, mask in known:
            self._masks[row] = mask[0]
            self._filled_late.add(row)
        if not concurrent or not jobs:
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
            self._executor = self._executor or LLExecutor()
            fill_next_token_bitmask_par(self._executor, plain, self._masks)
        if drafted:  # llguidance wants these apart: it refuses an empty draft
            self._executor = self._executor or LLExecutor()
            fill_next_token_bitmask_par_with_draft_tokens(self._executor, drafted, self._masks)
        self.overlap.record_masks(time.perf_counter() - started, beside=True)
        for _, first, _ in jobs:  # each slot's first row is sampled for sure: its additive row now
            self._penalty_row(first)
        self._penalty_ready = {first for _, first, _ in jobs}

    def wait_masks(self) -> None:
        """Until the step's masks are filled; a failure on the mask thread is raised here."""
        if self._worker is not None:
            self._worker.wait()

    def close(self) -> None:
        """The mask thread ends (a step after this starts a new one), and a vocabulary build under way is
        waited for: it reads the model's vocabulary, which the runner frees next (a model unloaded while its
        first tool turn was submitted crashed the process without this)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()
        self._vocabulary.join()

    def allowed(self, slot: int, offset: int) -> np.ndarray | None:
        """The tokens the slot may sample at row `offset` of its rows this step (bools); None: any."""
        row = self._row(slot, offset)
        if row is None:
            return None
        return bits.allowed_bools(self._masks[row], self.n_vocab)

    def best(self, slot: int, offset: int, logits: np.ndarray) -> int:
        """The greedy sample at row `offset`: the first of the best tokens in `logits` (float32) that the
        slot may sample, as np.argmax of the masked row picks it; forbidden ones it met are set to -inf.

        A row not filled yet stays so while the matcher allows the best token (2 us to ask; a mask of a
        152k vocabulary takes 30-1,500 us, the most inside a JSON string, where most tokens are allowed
        and so the next best ones are asked in turn, up to GREEDY_TRIES). Where the constraint forces
        the next bytes, or no token asked was allowed, the mask decides; a forced draft token is its row's."""
        forced = self.forced_at(slot, offset)
        if forced is not None:
            return forced  # the one token its row's mask allows (forced.py)
        rows, token = self._rows.get(slot), int(np.argmax(logits))
        if rows is None or offset >= rows.count:
            return token
        row = rows.first + offset
        if not rows.filled and row not in self._filled_late:
            for _ in range(GREEDY_TRIES):
                verdict = ask(self._matchers[slot], rows, offset, token)
                if verdict is None:
                    break
                if verdict:
                    return token
                logits[token] = -np.inf
                token = int(np.argmax(logits))
            self._row(slot, offset)  # filled now
        mask = self._masks[row]
        if bits.allows(mask, token):
            return token
        allowed = bits.sparse_tokens(mask)
        if allowed is not None:
            return int(allowed[np.argmax(logits[allowed])])
        self.forbid(slot, offset, logits)
        return int(np.argmax(logits))

    def allows(self, slot: int, offset: int, token: int) -> bool:
        """Whether the slot may sample `token` at row `offset` of its rows this step; a row not filled yet
        is filled only where the matcher cannot answer for the mask (draft_rows.ask)."""
        rows = self._rows.get(slot)
        if rows is None or offset >= rows.count:
            return True
        if offset < rows.forced:
            return token == rows.draft[offset]
        row = rows.first + offset
        if not rows.filled and row not in self._filled_late:
            verdict = ask(self._matchers[slot], rows, offset, token)
            if verdict is not None:
                return verdict
            self._row(slot, offset)
        return bits.allows(self._masks[row], token)

    def forbid(self, slot: int, offset: int, logits: np.ndarray) -> bool:
        """Set the tokens the slot may not sample at row `offset` to -inf in `logits` (float32, in place);
        False: the row is free. The mask's 0.0 / -inf row (bits.penalty_row) is added."""
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
        row = rows.first + offset
        if not rows.filled and row not in self._filled_late:
            started = time.perf_counter()
            self._fill_late(slot, rows, offset)
            self._filled_late.add(row)
            self._late_s += time.perf_counter() - started
        return row

    def _fill_late(self, slot: int, rows: SlotRows, offset: int) -> None:
        """The mask after the slot's first `offset` draft tokens, filled now (they were sampled: the
        constraint allowed each), as llguidance fills it beside the pass. A forced row's is its one token
        (forced.py): written, not asked of llguidance (the transformers runner masks every row it samples)."""
        forced = self.forced_at(slot, offset)
        if forced is not None:
            bits.only(self._masks[rows.first + offset], forced)
            return
        with past_draft(self._matchers[slot], rows, offset) as matcher:
            if matcher is not None:
                fill_next_token_bitmask(matcher, self._masks, rows.first + offset)

    def _penalty_row(self, row: int) -> None:
        bits.penalty_row(self._masks[row], self._penalties[row])


_CORES = os.cpu_count() or 1  # asked once: os.cpu_count() reads the system's CPU list (18 us a step)


def spare_core(threads: int) -> bool:
    """Whether a forward pass on `threads` CPU threads leaves a core for the masks to fill beside it."""
    return threads < _CORES

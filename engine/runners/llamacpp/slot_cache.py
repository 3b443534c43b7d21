"""What each slot's stream of the KV cache holds, and the moves on it: cut a tail, clear, copy a prompt start.

Separate from the runner's step because it changes for a different reason: the step decides what
one llama_decode computes, while this keeps the record of each slot's cells right when the
scheduler cuts a turn back, reuses a slot or shares a prompt start between slots. The cells may
still sit in the F32 prompt copy's context (prompt_copy.py) and may hold a picture's rows, which
are cut only at their edges (picture_rows.py); both are settled here before a move.
"""

from __future__ import annotations

import llama_cpp

from engine.runners.llamacpp.cells import copy_sequence
from engine.runners.llamacpp.picture_rows import SlotRows
from engine.runners.llamacpp.prompt_copy import PromptReader


class SlotCache:
    """Each slot's tokens in the cache (`tokens`), and the prompt copy whose cells may still be due."""

    def __init__(self, context: int, slots: int, reader: PromptReader | None, picture_rows: SlotRows,
                 drops_tails: bool, cache_on_gpu: bool) -> None:
        self._context: int | None = context
        self._memory = llama_cpp.llama_get_memory(context)
        self.tokens: list[list[int]] = [[] for _ in range(slots)]
        self.reader = reader  # long prompt chunks are read with the F32 copy (prompt_copy.py)
        self._picture_rows = picture_rows
        # A recurrent state cannot drop positions (llama_memory_seq_rm fails): not a rejected draft's,
        # not the tail past a copied prompt start.
        self.drops_tails = drops_tails
        self._cache_on_gpu = cache_on_gpu

    def settle(self, slot: int) -> None:
        """Before the generating context touches `slot`: the cells the copy read for it come over."""
        if self.reader is not None:
            self.reader.flush(slot)
            self.reader.forget(slot)

    def remove_from(self, slot: int, position: int) -> bool:
        """Drop `slot`'s cells from `position` on; False where that cannot be done (inside a picture)."""
        self.settle(slot)
        start = self._picture_rows.cut_position(slot, self.tokens[slot], position)  # None: inside a picture
        self._picture_rows.forget(slot)
        removed = start is not None and bool(llama_cpp.llama_memory_seq_rm(self._memory, slot, start, -1))
        if removed:
            del self.tokens[slot][position:]
        return removed

    def clear(self, slot: int) -> None:
        if self.reader is not None:
            self.reader.forget(slot)
        self._picture_rows.forget(slot)
        llama_cpp.llama_memory_seq_rm(self._memory, slot, -1, -1)
        self.tokens[slot].clear()

    def copy_prefix(self, source: int, target: int, length: int) -> bool:
        """Give `target` the first `length` positions of `source`, so a prompt start computed once
        serves every slot; the tail past `length` goes. A recurrent state cannot lose a tail (it
        holds the whole sequence or nothing), so there the start is computed again."""
        if self._context is None or not self.drops_tails:
            return False
        self.settle(source)
        start = self._picture_rows.cut_position(source, self.tokens[source], length)
        if start is None:
            return False
        if self.reader is not None:
            self.reader.forget(target)
        self._picture_rows.forget(target)
        copy_sequence(self._context, source, target, cache_on_gpu=self._cache_on_gpu)
        llama_cpp.llama_memory_seq_rm(self._memory, target, start, -1)
        self.tokens[target] = self.tokens[source][:length]
        return True

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        self._context = None

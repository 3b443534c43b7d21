"""A slot's picture rows into its sequence, as libmtmd's helper decodes them (tools/mtmd/mtmd-helper.cpp,
mtmd_helper_decode_image_chunk), but inside Hearth's step and its token positions.

The helper gives each image chunk (a `Slice`) its rows' positions from libmtmd (`mtmd_image_tokens_get_
decoder_pos`: one per row, or M-RoPE's four sections, t/y/x/z, where every row shares t), decodes them
n_batch rows at a time with non-causal attention where the projector asks for it (Gemma 3), and moves
the text after the slice on by `mtmd_input_chunk_get_n_pos`, not by its row count. This module does the
same per slot: `SlotRows.decode` walks a slot's share of the step up to its last picture row (text runs
by the runner's token batch, slices by llama_batch_ext), and keeps what Hearth's index-based bookkeeping
needs:

- the position of each slot's next token (`position`), remembered per slot so a decode step does not
  walk the history again; the scheduler still counts tokens (cells), llama.cpp sees positions.
- rows read ahead: the scheduler cuts prompts into chunks by token count, and may end one inside a
  slice. A non-causal slice cannot be read in two parts (its first rows would not see its last), so
  the whole slice goes in then and the next chunk's rows of it are skipped.
- where a slot's cache may be cut (`cut_position`): never inside a slice whose rows share positions or
  saw each other (its cells would be half a picture); the runner then reads the chat again.
"""

from __future__ import annotations

import ctypes
import dataclasses
from typing import Any, Callable, Sequence, cast

import llama_cpp

from engine.runners.base import CacheFull, RunnerError, SlotWork
from engine.runners.llamacpp.batch import put_tokens
from engine.runners.llamacpp.pictures import LlamaPictures, Slice


class SlotRows:
    """Picture rows into slots' sequences of one llama.cpp context, and where each slot's positions stand
    (without a projector: every position is its token's index, and nothing here does anything)."""

    def __init__(self, pictures: LlamaPictures | None, context: int) -> None:
        self._pictures = pictures
        self._context = context
        self._n_batch = int(llama_cpp.llama_n_batch(cast(Any, context)))
        self._batch: Any = None  # llama_batch_ext for rows, made on the first picture
        self._text: llama_cpp.llama_batch | None = None  # tokens before a picture, made on the first
        self._next: dict[int, tuple[int, int]] = {}  # slot -> (token index, its position), the slot's next token
        self._ahead: dict[int, tuple[int, list[int]]] = {}  # slot -> (token index, ids in its cells past the record)

    # ------------------------------------------------------------ positions

    @property
    def pictures(self) -> LlamaPictures:
        if self._pictures is None:
            raise RunnerError("This model has no vision projector.")
        return self._pictures

    def position(self, slot: int, tokens: Sequence[int], index: int) -> int:
        """The position of token `index` in `slot`'s sequence, whose record is `tokens`."""
        if self._pictures is None or not self._pictures.mrope:
            return index
        known = self._next.get(slot)
        if known is not None and known[0] == index:
            return known[1]
        position = self.pictures.position_after(tokens, index)
        self._next[slot] = (index, position)
        return position

    def counts_tokens(self, item: SlotWork, records: list[list[int]]) -> bool:
        """Whether `item`'s positions are its tokens' indices (what the prompt-reading copy assumes)."""
        return self.position(item.slot, records[item.slot], item.start_pos) == item.start_pos

    def step_positions(self, plan: Sequence[SlotWork], records: list[list[int]]) -> dict[int, int] | None:
        """Where each item's first token goes in its slot's sequence (None: at its index, every one); each
        slot's next position is remembered as after the step."""
        if self._pictures is None or not self._pictures.mrope:
            return None
        positions = {item.slot: self.position(item.slot, records[item.slot], item.start_pos) for item in plan}
        for item in plan:
            self._next[item.slot] = (item.start_pos + len(item.fed), positions[item.slot] + len(item.fed))
        return positions

    def forget(self, slot: int) -> None:
        """The slot's cells changed outside a step (cut, cleared, copied into)."""
        self._next.pop(slot, None)
        self._ahead.pop(slot, None)

    def cut_position(self, slot: int, tokens: Sequence[int], index: int) -> int | None:
        """The position from which to drop `slot`'s cells so that its first `index` tokens stay; None where
        that would split a slice that must stay whole (its rows share positions or saw each other): where
        the token before the cut is one of its rows but its last (inside it, or at the end of a record that
        stops inside it: such a record's cells hold either more of the slice or none it could keep)."""
        if self._pictures is None:
            return index
        before = tokens[index - 1] if 0 < index <= len(tokens) else -1
        if before >= self._pictures.base:
            piece = self._pictures.slice_of(before)
            if before != piece.first_id + piece.count - 1 and piece.whole:
                return None
        return self.position(slot, tokens, index)

    def decode_plan(self, plan: list[SlotWork], records: list[list[int]], reading: Callable[[], None]) -> list[SlotWork]:
        """Each slot's rows up to its last picture into its sequence first, its record (`records[slot]`)
        kept; the rest of the step, every slot's text after its pictures, for the one token batch.
        `reading()` first where there is a picture: its rows and the text before it are prompt reading."""
        if self._pictures is None:
            return plan
        if any(max(item.tokens, default=0) >= self._pictures.base for item in plan):
            reading()
        rest = []
        for item in plan:
            left = self.decode(item, records[item.slot], self._decode_text)
            if left is not item:
                records[item.slot][item.start_pos:] = item.tokens[: left.start_pos - item.start_pos]
            if left.tokens or left.sample:
                rest.append(left)
        return rest

    # ------------------------------------------------------------ the step

    def decode(self, item: SlotWork, tokens: Sequence[int], decode_tokens: Callable[[list[int], int, int], None]) -> SlotWork:
        """Everything of `item` up to its last picture row into the slot's sequence, in order (text runs by
        `decode_tokens(tokens, position, slot)`, picture rows as embeddings); returns the rest. `tokens`:
        the slot's record before `item`."""
        base = self.pictures.base
        fed = item.tokens
        last = max((i for i, t in enumerate(fed) if t >= base), default=-1)
        if last < 0:
            return item
        if item.sample and last == len(fed) - 1:
            raise RunnerError("a prompt may not end in a picture")
        position = self.position(item.slot, tokens, item.start_pos)
        i = self._skip_ahead(item)
        while i <= last:
            j = i
            if fed[i] < base:
                while j <= last and fed[j] < base:
                    j += 1
                decode_tokens(list(fed[i:j]), position, item.slot)
                position += j - i
            else:
                piece = self.pictures.slice_of(fed[i])
                row = fed[i] - piece.first_id
                # the slice's rows in order, and no further: the next picture's ids may follow on from its last
                while j <= last and row + (j - i) < piece.count and fed[j] == piece.first_id + row + (j - i):
                    j += 1
                position = self._slice_rows(item, piece, range(row, row + j - i), position, item.start_pos + j)
            i = j
        rest = dataclasses.replace(item, tokens=fed[last + 1:], start_pos=item.start_pos + last + 1)
        self._next[item.slot] = (rest.start_pos, position)
        return rest

    def _skip_ahead(self, item: SlotWork) -> int:
        """How many of `item`'s first tokens are rows already read ahead into its cells."""
        ahead = self._ahead.pop(item.slot, None)
        if ahead is None:
            return 0
        index, ids = ahead
        count = min(len(ids), len(item.tokens))
        if index != item.start_pos or list(item.tokens[:count]) != ids[:count]:
            raise RunnerError("a picture's rows read ahead do not match the chat's next tokens")
        if count < len(ids):
            self._ahead[item.slot] = (index + count, ids[count:])
        return count

    def _slice_rows(self, item: SlotWork, piece: Slice, rows: range, position: int, after: int) -> int:
        """Rows `rows` of `piece` at `position` (the first's); returns the position of what follows them."""
        start = position - int(piece.relative[rows.start, 0])  # where the slice itself sits
        if piece.non_causal and rows.start != 0:
            raise RunnerError("a picture's rows came in two parts where the model reads them together")
        if piece.non_causal and rows.stop < piece.count:  # the chunk ends inside the slice: all of it now
            self._ahead[item.slot] = (after, list(range(piece.first_id + rows.stop, piece.first_id + piece.count)))
            rows = range(rows.start, piece.count)
        self._decode_rows(piece, rows, start, item.slot)
        if rows.stop == piece.count:
            return start + piece.n_pos
        return start + int(piece.relative[rows.stop, 0])

    def _decode_rows(self, piece: Slice, rows: range, start: int, slot: int) -> None:
        embeddings = self.pictures.embeddings(piece)
        positions = piece.positions(start, rows)
        if self._batch is None:
            self._batch = llama_cpp.llama_batch_ext_init(cast(Any, self._context))
        width = embeddings.shape[1]
        row_bytes, position_bytes = width * 4, positions.shape[1] * 4
        if piece.non_causal:
            llama_cpp.llama_set_causal_attn(cast(Any, self._context), False)
        try:
            for first in range(0, len(rows), self._n_batch):
                llama_cpp.llama_batch_ext_clear(self._batch)
                for k in range(first, min(first + self._n_batch, len(rows))):
                    data = ctypes.cast(embeddings.ctypes.data + (rows.start + k) * row_bytes,
                                       ctypes.POINTER(ctypes.c_float))
                    index = llama_cpp.llama_batch_ext_add_embd(self._batch, slot, llama_cpp.llama_embd(data, 1, width))
                    where = ctypes.cast(positions.ctypes.data + k * position_bytes, ctypes.POINTER(llama_cpp.llama_pos))
                    if index < 0 or not llama_cpp.llama_batch_ext_set_pos(self._batch, index, where):
                        raise RunnerError(f"llama.cpp refused a picture's row (error {index})")
                self._process(len(rows))
        finally:
            if piece.non_causal:
                llama_cpp.llama_set_causal_attn(cast(Any, self._context), True)

    def _decode_text(self, tokens: list[int], position: int, slot: int) -> None:
        """Text before a slot's picture, alone in a pass (the picture's rows follow it in the sequence)."""
        if self._text is None:
            self._text = llama_cpp.llama_batch_init(self._n_batch, 0, 1)
        for first in range(0, len(tokens), self._n_batch):
            part = tokens[first:first + self._n_batch]
            self._text.n_tokens = put_tokens(self._text, 0, part, position + first, slot)
            self._check(llama_cpp.llama_decode(cast(Any, self._context), self._text), f"the {len(part)} tokens before")

    def _process(self, rows: int) -> None:
        result = llama_cpp.llama_process(cast(Any, self._context), llama_cpp.LLAMA_PROCESS_TYPE_DECODE, self._batch)
        self._check(result, f"{rows} rows of")

    @staticmethod
    def _check(result: int, what: str) -> None:
        if result == 1:
            raise CacheFull("The model's memory for this chat has no room left for the picture. Start a new chat, "
                            "or raise the context length in Settings.")
        if result != 0:
            raise RunnerError(f"llama.cpp failed to decode {what} a picture (error {result}).")

    def close(self) -> None:
        if self._batch is not None:
            llama_cpp.llama_batch_ext_free(self._batch)
            self._batch = None
        if self._text is not None:
            llama_cpp.llama_batch_free(self._text)
            self._text = None

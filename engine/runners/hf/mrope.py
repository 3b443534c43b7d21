"""Qwen2-VL's M-RoPE in the packed step: each token's (time, row, column) rotary position.

A text token has one position in all three. A picture's tokens sit on its grid, from where its first
token would have sat as text: (start + frame, start + row, start + column); the text after a picture goes
on from start + max(rows, columns), not from start + its token count (transformers' `get_rope_index`).
So a token's rotary position is not its row in the slot's cache: each slot keeps where its pictures
start, and a text token's position is its row less what the pictures wholly before it saved.
"""

from __future__ import annotations

from typing import Sequence

import torch

from engine.runners.base import RunnerError, SlotWork
from engine.runners.hf.vision import Picture, Pictures


def saved(picture: Picture) -> int:
    """How many positions fewer than its token count a picture moves the text after it on by."""
    assert picture.grid is not None
    _, rows, columns = picture.grid
    return picture.count - max(rows, columns)


class MropePositions:
    """Per slot, where its pictures start; from that, the 3-D positions of a step's tokens."""

    def __init__(self, slots: int, pictures: Pictures) -> None:
        self._pictures = pictures
        self._starts: list[list[tuple[int, Picture]]] = [[] for _ in range(slots)]  # (row of first token, picture)

    def forget_from(self, slot: int, position: int) -> None:
        self._starts[slot] = [(row, picture) for row, picture in self._starts[slot] if row < position]

    def copy_prefix(self, source: int, target: int, length: int) -> None:
        self._starts[target] = [(row, picture) for row, picture in self._starts[source] if row < length]

    def positions(self, work: Sequence[SlotWork], device: torch.device) -> torch.Tensor:
        """[3, 1, N] positions of the packed step's tokens, in the order build_plan packs them."""
        rows: list[tuple[int, int, int]] = []
        for item in work:
            self.forget_from(item.slot, item.start_pos)
            rows.extend(self._item(item))
        return torch.tensor(rows, dtype=torch.long, device=device).T.unsqueeze(1)

    def _shift(self, slot: int, row: int) -> int:
        return sum(saved(picture) for first, picture in self._starts[slot] if first + picture.count <= row)

    def _item(self, item: SlotWork) -> list[tuple[int, int, int]]:
        out: list[tuple[int, int, int]] = []
        starts = self._starts[item.slot]
        for row, token in enumerate(item.fed, start=item.start_pos):
            if token < self._pictures.base:
                position = row - self._shift(item.slot, row)
                out.append((position, position, position))
                continue
            picture = self._pictures.picture_of(token)
            offset = token - picture.first_id
            first = row - offset
            if not any(start == first for start, _ in starts):
                if offset:
                    raise RunnerError(f"slot {item.slot}: a picture's tokens continue where it was not begun")
                starts.append((first, picture))
            assert picture.grid is not None
            _, rows, columns = picture.grid
            frame, rest = divmod(offset, rows * columns)
            start = first - self._shift(item.slot, first)
            out.append((start + frame, start + rest // columns, start + rest % columns))
        return out

"""The packed step's plan for a vision model: the positions and the attention each kind's pictures need.

M-RoPE kinds (Qwen2-VL, Qwen2.5-VL) get 3-D rotary positions (mrope.py). Kinds whose picture tokens
see each other both ways (Gemma 3, as transformers' `token_type_ids` mask does in its prefill) get a
mask in which a picture's token reaches to the picture's last token; a prompt chunk that ends inside a
picture is carried on to the picture's end in this step, since its first tokens' keys depend on the
later ones. Those extra rows go into the slot's cache beyond what the slot holds and are written again,
the same, when the scheduler feeds them next.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import torch

from engine.runners.base import RunnerError, SlotWork
from engine.runners.hf.cache import StepPlan, build_plan
from engine.runners.hf.mrope import MropePositions
from engine.runners.hf.vision import Pictures


class PictureSteps:
    """How a runner plans its steps: build_plan's plan, with what its pictures need (None: a text model)."""

    def __init__(self, pictures: Pictures | None, slots: int) -> None:
        self.pictures = pictures
        self.mrope = MropePositions(slots, pictures) if pictures is not None and pictures.kind.mrope else None

    def build(self, work: Sequence[SlotWork], device: torch.device, varlen: bool) -> StepPlan:
        if self.pictures is None:
            return build_plan(work, device, varlen)
        reach: list[int] | None = None
        if self.pictures.kind.picture_sees_itself and self._has_pictures(work):
            if varlen:
                raise RunnerError(f"flash-attn cannot let a {self.pictures.kind.name} picture's tokens see each other; "
                                  "set Flash attention to off in Settings to send pictures to this model")
            work = [self._to_picture_end(item) for item in work]
            reach = self._reach(work)
        plan = build_plan(work, device, varlen, reach)
        if self.mrope is not None:
            plan.position_ids = self.mrope.positions(work, device)
        return plan

    def forget_from(self, slot: int, position: int) -> None:
        if self.mrope is not None:
            self.mrope.forget_from(slot, position)

    def copy_prefix(self, source: int, target: int, length: int) -> None:
        if self.mrope is not None:
            self.mrope.copy_prefix(source, target, length)

    def _has_pictures(self, work: Sequence[SlotWork]) -> bool:
        assert self.pictures is not None
        base = self.pictures.base
        return any(token >= base for item in work for token in item.fed)

    def _to_picture_end(self, item: SlotWork) -> SlotWork:
        assert self.pictures is not None
        last = item.fed[-1]
        if item.sample or item.draft or last < self.pictures.base:
            return item  # a sampled item ends a prompt (never inside a picture) or is a decode token
        picture = self.pictures.picture_of(last)
        end = picture.first_id + picture.count
        return replace(item, tokens=[*item.tokens, *range(last + 1, end)]) if last + 1 < end else item

    def _reach(self, work: Sequence[SlotWork]) -> list[int]:
        """The last key row each packed token attends to: its own, or for a picture's token the picture's last."""
        assert self.pictures is not None
        out: list[int] = []
        base = self.pictures.base
        for item in work:
            for row, token in enumerate(item.fed, start=item.start_pos):
                if token >= base:
                    picture = self.pictures.picture_of(token)
                    row += picture.first_id + picture.count - 1 - token
                out.append(row)
        return out

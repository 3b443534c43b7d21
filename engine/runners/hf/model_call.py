"""The model's forward call as the runner makes it: its cache, positions and mask, and only the logits it needs.

Models name their cache argument `cache` or `past_key_values`, and not all take `logits_to_keep`
(without it every position's logits are computed and the sampled rows picked after). Eager attention
adds the mask to the scores, so it gets a float mask; the other kernels take the boolean one.
A step with pictures feeds embeddings (vision.py) instead of token ids.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from engine.runners.hf.cache import StepPlan
from engine.runners.hf.vision import Pictures


class ModelCall:
    """How to call one loaded model; the model itself is passed each time (the runner may drop it)."""

    def __init__(self, model: Any, attention: str, dtype: torch.dtype) -> None:
        parameters = inspect.signature(model.forward).parameters
        self.cache_kwarg = "cache" if "cache" in parameters else "past_key_values"
        self.keeps_logits = "logits_to_keep" in parameters
        self._eager = attention == "eager"
        self._dtype = dtype

    def decode(self, model: Any, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor,
               cache: Any) -> torch.Tensor:
        """The last position's logits of one decode step (the static decoder's call, decode.py)."""
        kwargs: dict[str, Any] = {self.cache_kwarg: cache, "use_cache": True, "position_ids": positions,
                                  "attention_mask": mask}
        if self.keeps_logits:
            kwargs["logits_to_keep"] = 1
        return model(input_ids=ids, **kwargs).logits[:, -1]

    def packed(self, model: Any, plan: StepPlan, cache: Any, pictures: Pictures | None) -> torch.Tensor:
        """One row of logits per sampled position of the packed step `plan`."""
        mask = plan.mask
        if mask is not None and self._eager:
            # eager attention adds the mask to the scores
            floor = torch.finfo(self._dtype).min
            mask = torch.zeros(mask.shape, dtype=self._dtype, device=mask.device).masked_fill(~mask, floor)
        kwargs: dict[str, Any] = {
            self.cache_kwarg: cache,
            "use_cache": True,
            "position_ids": plan.position_ids,
            "attention_mask": mask,
            **plan.flash_kwargs,
        }
        if self.keeps_logits:
            kwargs["logits_to_keep"] = plan.logits_index if plan.logits_index is not None else 1
        if pictures is not None and bool((plan.input_ids >= pictures.base).any()):
            inputs: dict[str, torch.Tensor] = {"inputs_embeds": pictures.embed(plan.input_ids)}
        else:
            inputs = {"input_ids": plan.input_ids}
        logits = model(**inputs, **kwargs).logits[0]
        if not self.keeps_logits and plan.logits_index is not None:
            logits = logits[plan.logits_index]
        return logits

"""Per-slot token sampling in torch, in llama.cpp's order.

penalties -> top-k -> top-p -> min-p -> temperature -> draw, so a chat's
settings mean the same on both backends. Each slot has its own seeded
`torch.Generator`: a chat with a seed repeats itself whatever runs beside it.
"""

from __future__ import annotations

import secrets
from typing import Sequence

import torch

from engine.protocol import SamplingParams
from engine.runners.base import PENALTY_LAST_N


class SlotSampler:
    def __init__(self, params: SamplingParams) -> None:
        self.params = params
        self.generator = torch.Generator(device="cpu")
        seed = params.seed if params.seed is not None else secrets.randbits(63)
        self.generator.manual_seed(seed)

    def sample(self, logits: torch.Tensor, recent: Sequence[int]) -> int:
        """One token from a row of logits `[vocab]`; `recent` feeds the penalty."""
        logits = logits.float()
        params = self.params
        if recent and (params.repeat_penalty != 1.0 or params.frequency_penalty or params.presence_penalty):
            logits = _apply_penalties(logits, recent[-PENALTY_LAST_N:], params)
        if params.greedy:
            return int(torch.argmax(logits).item())
        values, indices = _top_k(logits, params.top_k)
        keep = _top_p_min_p_keep(torch.softmax(values, dim=-1), params.top_p, params.min_p)
        values, indices = values[:keep], indices[:keep]
        probs = torch.softmax(values / params.temperature, dim=-1).cpu()
        choice = torch.multinomial(probs, 1, generator=self.generator)
        return int(indices[int(choice.item())].item())


def _apply_penalties(logits: torch.Tensor, recent: Sequence[int], params: SamplingParams) -> torch.Tensor:
    """llama.cpp's penalties sampler: repeat divides (or multiplies) a used token's logit, then
    frequency subtracts per use and presence once per token."""
    counts: dict[int, int] = {}
    for token in recent:
        if token < logits.shape[-1]:
            counts[token] = counts.get(token, 0) + 1
    ids = torch.tensor(sorted(counts), dtype=torch.long, device=logits.device)
    uses = torch.tensor([counts[token] for token in sorted(counts)], dtype=logits.dtype, device=logits.device)
    picked = logits[ids]
    penalty = params.repeat_penalty
    picked = torch.where(picked > 0, picked / penalty, picked * penalty)
    picked = picked - uses * params.frequency_penalty - params.presence_penalty
    logits = logits.clone()
    logits[ids] = picked
    return logits


def _top_k(logits: torch.Tensor, top_k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Candidates sorted by logit, best first."""
    if 0 < top_k < logits.shape[-1]:
        return torch.topk(logits, top_k)
    return torch.sort(logits, descending=True)


def _top_p_min_p_keep(probs: torch.Tensor, top_p: float, min_p: float) -> int:
    """How many of the sorted candidates survive top-p and min-p (at least one)."""
    keep = probs.shape[-1]
    if 0.0 < top_p < 1.0:
        cumulative = torch.cumsum(probs, dim=-1)
        # the smallest prefix whose mass reaches top_p
        keep = min(keep, int(torch.searchsorted(cumulative, torch.tensor(top_p, device=probs.device)).item()) + 1)
    if min_p > 0.0:
        keep = min(keep, int((probs >= probs[0] * min_p).sum().item()))
    return max(1, keep)

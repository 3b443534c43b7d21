"""A step's logits into each sampling slot's new tokens: one, plus one per draft token its sampler agrees with.

An all-greedy step without drafts or penalties takes one argmax and one copy to the host for every
chat at once; otherwise each slot's own sampler (sampling.py) draws in turn.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.runners.base import PENALTY_LAST_N, CacheFull, RunnerError, SlotWork
from engine.runners.hf.rows import SampledRows
from engine.runners.hf.sampling import SlotSampler

Sampled = tuple[dict[int, list[int]], dict[int, torch.Tensor]]  # slot -> new tokens; slot -> its last row


def sample_step(logits: torch.Tensor, work: Sequence[SlotWork], samplers: Sequence[SlotSampler],
                history: Sequence[list[int]], rows: SampledRows) -> Sampled:
    """Each sampling slot's new tokens from its rows of logits, and the row each last token came from."""
    sampling = [item for item in work if item.sample]
    chosen = [samplers[item.slot] for item in sampling]
    rows.prepare(logits, sampling)
    if not any(item.draft for item in sampling) and all(
            s.params.greedy and s.params.repeat_penalty == 1.0 for s in chosen):
        # one argmax and one copy to the host for all chats, not one per chat
        last = {item.slot: logits[row] for row, item in enumerate(sampling)}
        picked = logits.float().argmax(dim=-1).tolist()
        for row, (item, token) in enumerate(zip(sampling, picked)):
            rows.finish(item.slot, [int(token)], logits[row : row + 1])
        return {item.slot: [int(token)] for item, token in zip(sampling, picked)}, last
    new: dict[int, list[int]] = {}
    last = {}
    first = 0
    for item in sampling:
        item_rows = logits[first : first + 1 + len(item.draft)]
        new[item.slot] = _sample_and_verify(item, item_rows, samplers[item.slot], history[item.slot], rows)
        last[item.slot] = item_rows[len(new[item.slot]) - 1]
        first += len(item_rows)
    return new, last


def _sample_and_verify(item: SlotWork, item_rows: torch.Tensor, sampler: SlotSampler, history: list[int],
                       rows: SampledRows) -> list[int]:
    """Sample after the last token, then after each draft token while the draft agrees: each
    sample sees the history (repeat penalty) and the generator state that generating one token
    per step would give it, so drafts change how fast an answer comes, never what it is."""
    context_end = item.start_pos + len(item.tokens)  # the tokens row 0 has seen
    tokens: list[int] = []
    for offset, guess in enumerate([*item.draft, None]):
        end = context_end + offset
        token = sampler.sample(item_rows[offset], history[max(0, end - PENALTY_LAST_N) : end])
        tokens.append(token)
        if token != guess:
            break
    rows.finish(item.slot, tokens, item_rows)
    return tokens


def check_step(work: Sequence[SlotWork], history: Sequence[list[int]], slots: int, context_length: int) -> None:
    """A step plan the runner can run: each slot once, known, fed, starting within what it caches."""
    if len({item.slot for item in work}) != len(work):
        raise RunnerError("one step named the same slot twice")
    for item in work:
        if not 0 <= item.slot < slots or not item.tokens or (item.draft and not item.sample):
            raise RunnerError(f"bad step item for slot {item.slot} ({len(item.tokens)} tokens)")
        cached = len(history[item.slot])
        if item.start_pos > cached:
            raise RunnerError(f"slot {item.slot}: step starts at position {item.start_pos}, but only {cached} are cached")
        if item.start_pos + len(item.fed) > context_length:
            raise CacheFull(f"the chat is longer than the context of {context_length} tokens")

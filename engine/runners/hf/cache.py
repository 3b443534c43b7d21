"""Per-slot KV storage for the HF runner, and the plan of one packed step.

Every step packs all slots' new tokens into ONE row `[1, N]` (no padding), so
a 512-token prompt chunk beside three decode tokens costs 515 token-rows, not
4 x 512. Each layer keeps keys and values as `[slots, capacity, heads, dim]`;
`update` scatters the step's new keys to (slot, position) and hands attention
the keys of every slot in the step, concatenated in the same order as the
queries. Attention stays inside each slot through a block-diagonal causal mask
(SDPA, eager) or `cu_seqlens` (flash-attn varlen). A slot's cache survives
across turns; dropping a suffix is only a change of the slot's length.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

from engine.runners.base import SlotWork

GROWTH_STEP = 256  # positions added at a time when a CPU cache grows


@dataclass
class StepPlan:
    """Index tensors for one packed forward pass, built once per step."""

    input_ids: torch.Tensor  # [1, N]
    position_ids: torch.Tensor  # [1, N]
    write_slots: torch.Tensor  # [N]  slot of each new token
    write_positions: torch.Tensor  # [N]  its position in that slot
    needed: int  # highest position written + 1 (capacity the layers must have)
    query_length: int  # N
    key_length: int  # K: sum over the step's slots of (cached + new)
    single: tuple[int, int] | None  # (slot, K) when one slot runs: keys are a view
    read_slots: torch.Tensor | None = None  # [K] gather indices when several slots run
    read_positions: torch.Tensor | None = None
    mask: torch.Tensor | None = None  # [1, 1, N, K] bool, True = attend
    logits_index: torch.Tensor | None = None  # [R] packed indices whose logits are kept
    sampled_slots: list[int] = field(default_factory=list)
    flash_kwargs: dict[str, Any] = field(default_factory=dict)
    _flat: dict[int, tuple[torch.Tensor, torch.Tensor | None]] = field(default_factory=dict)

    def flat_indices(self, capacity: int) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Row indices into a layer's storage seen as `[slots * capacity, heads, dim]`.

        index_copy_/index_select on one flat dimension are much cheaper than
        two-tensor advanced indexing; all layers share one capacity, so this
        is computed once per step.
        """
        if capacity not in self._flat:
            write = self.write_slots * capacity + self.write_positions
            read = None
            if self.read_slots is not None and self.read_positions is not None:
                read = self.read_slots * capacity + self.read_positions
            self._flat[capacity] = (write, read)
        return self._flat[capacity]


def uses_varlen(attention: str) -> bool:
    """Flash-attn kernels take packed sequences by cu_seqlens instead of a mask."""
    return attention.startswith("flash_attention")


def build_plan(work: Sequence[SlotWork], device: torch.device, varlen: bool, reach: list[int] | None = None) -> StepPlan:
    """Pack the step's items; `start_pos` of each item is its slot's cached length. `reach`: the last key row
    each packed token attends to where that is not its own (a picture's tokens seeing the whole picture)."""
    ids, positions, slots, last_index, sampled = _pack(work)
    ends = [item.start_pos + len(item.fed) for item in work]
    position_ids = torch.tensor(positions, dtype=torch.long, device=device)
    plan = StepPlan(
        input_ids=torch.tensor([ids], dtype=torch.long, device=device),
        position_ids=position_ids.unsqueeze(0),
        write_slots=torch.tensor(slots, dtype=torch.long, device=device),
        write_positions=position_ids,
        needed=max(ends),
        query_length=len(ids),
        key_length=sum(ends),
        single=(work[0].slot, ends[0]) if len(work) == 1 else None,
        logits_index=torch.tensor(last_index, dtype=torch.long, device=device) if last_index else None,
        sampled_slots=sampled,
    )
    if varlen:
        plan.flash_kwargs = _flash_kwargs(work, ends, device)
    masked = not varlen and (reach is not None or _needs_mask(work))
    if plan.single is None or masked:  # else: one slot, its keys a view, no mask (single-chat decode)
        limit = torch.tensor(reach, dtype=torch.long, device=device) if reach is not None else plan.write_positions
        _add_key_indices(plan, work, ends, device, masked, limit)
    return plan


def _pack(work: Sequence[SlotWork]) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """Token ids, positions, slots of the packed row; rows whose logits are kept (a sampling item's
    last token and its draft tokens), and slots that are sampled."""
    ids: list[int] = []
    positions: list[int] = []
    slots: list[int] = []
    last_index: list[int] = []
    sampled: list[int] = []
    for item in work:
        fed = item.fed
        ids.extend(fed)
        positions.extend(range(item.start_pos, item.start_pos + len(fed)))
        slots.extend([item.slot] * len(fed))
        if item.sample:
            last_index.extend(range(len(ids) - 1 - len(item.draft), len(ids)))
            sampled.append(item.slot)
    return ids, positions, slots, last_index, sampled


def _add_key_indices(
    plan: StepPlan, work: Sequence[SlotWork], ends: list[int], device: torch.device, masked: bool, limit: torch.Tensor
) -> None:
    # Built on the device: a few small kernels, no host copies per step.
    key_segment = _segments(ends, device)
    key_position = torch.arange(plan.key_length, device=device) - _starts(ends, device)[key_segment]
    if plan.single is None:
        plan.read_slots = torch.tensor([item.slot for item in work], dtype=torch.long, device=device)[key_segment]
        plan.read_positions = key_position
    if masked:
        query_segment = _segments([len(item.fed) for item in work], device)
        same = query_segment[:, None] == key_segment[None, :]
        causal = key_position[None, :] <= limit[:, None]
        plan.mask = (same & causal)[None, None]


def _segments(lengths: list[int], device: torch.device) -> torch.Tensor:
    """[0]*lengths[0] + [1]*lengths[1] + ...: which item each packed row belongs to."""
    counts = torch.tensor(lengths, dtype=torch.long, device=device)
    return torch.repeat_interleave(torch.arange(len(lengths), device=device), counts)


def _starts(lengths: list[int], device: torch.device) -> torch.Tensor:
    return torch.tensor([0, *_cumsum(lengths)[:-1]], dtype=torch.long, device=device)


def _needs_mask(work: Sequence[SlotWork]) -> bool:
    # One slot decoding one token attends to all its keys; one slot starting
    # from position 0 is plain causal. Both run without a mask, which lets
    # SDPA pick its flash kernel on a GPU.
    if len(work) > 1:
        return True
    item = work[0]
    return len(item.fed) > 1 and item.start_pos > 0


def _flash_kwargs(work: Sequence[SlotWork], ends: list[int], device: torch.device) -> dict[str, Any]:
    query_lengths = [len(w.fed) for w in work]
    cu_q = torch.tensor([0, *_cumsum(query_lengths)], dtype=torch.int32, device=device)
    cu_k = torch.tensor([0, *_cumsum(ends)], dtype=torch.int32, device=device)
    return {
        "cu_seq_lens_q": cu_q,
        "cu_seq_lens_k": cu_k,
        "max_length_q": max(query_lengths),
        "max_length_k": max(ends),
    }


def _cumsum(values: list[int]) -> list[int]:
    total, out = 0, []
    for value in values:
        total += value
        out.append(total)
    return out


class SlotLayer(CacheLayerMixin):
    """One layer's keys and values for every slot."""

    is_sliding = False

    def __init__(self, owner: "SlotCache") -> None:
        super().__init__()
        self.owner = owner

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        heads, dim = key_states.shape[1], key_states.shape[3]
        shape = (self.owner.rows, self.owner.initial_capacity, heads)
        self.keys = torch.zeros(*shape, dim, dtype=key_states.dtype, device=key_states.device)
        self.values = torch.zeros(*shape, value_states.shape[3], dtype=value_states.dtype, device=value_states.device)
        self.is_initialized = True

    def _grow(self, needed: int) -> None:
        assert self.keys is not None and self.values is not None
        capacity = self.keys.shape[1]
        if needed <= capacity:
            return
        target = max(needed, capacity * 2)
        target = min(self.owner.max_capacity, -(-target // GROWTH_STEP) * GROWTH_STEP)
        self.keys = _extend(self.keys, target)
        self.values = _extend(self.values, target)

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        plan = self.owner.current_plan()
        self._grow(plan.needed)
        assert self.keys is not None and self.values is not None
        capacity = self.keys.shape[1]
        write, read = plan.flat_indices(capacity)
        flat_keys = self.keys.view(-1, *self.keys.shape[2:])
        flat_values = self.values.view(-1, *self.values.shape[2:])
        # [1, heads, N, dim] -> [N, heads, dim], the storage's row layout
        flat_keys.index_copy_(0, write, key_states[0].transpose(0, 1))
        flat_values.index_copy_(0, write, value_states[0].transpose(0, 1))
        if plan.single is not None:
            slot, length = plan.single
            keys, values = self.keys[slot, :length], self.values[slot, :length]
        else:
            assert read is not None
            keys, values = flat_keys.index_select(0, read), flat_values.index_select(0, read)
        return keys.transpose(0, 1).unsqueeze(0), values.transpose(0, 1).unsqueeze(0)

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.owner.current_plan().key_length, 0

    def get_seq_length(self) -> int:
        plan = self.owner.plan
        return plan.key_length - plan.query_length if plan is not None else 0

    def get_max_length(self) -> int:
        return self.owner.max_capacity

    def nbytes(self) -> int:
        if self.keys is None or self.values is None:
            return 0
        return self.keys.numel() * self.keys.element_size() + self.values.numel() * self.values.element_size()


def _extend(tensor: torch.Tensor, capacity: int) -> torch.Tensor:
    grown = torch.zeros(
        tensor.shape[0], capacity, *tensor.shape[2:], dtype=tensor.dtype, device=tensor.device
    )
    grown[:, : tensor.shape[1]] = tensor
    return grown


class SlotCache(Cache):
    """The model's `Cache`: one `SlotLayer` per decoder layer, one plan per step."""

    def __init__(self, num_layers: int, slots: int, max_capacity: int, preallocate: bool, spare_rows: int = 0) -> None:
        self.slots = slots
        self.rows = slots + spare_rows  # a spare row takes the padding of fixed-size decode steps (decode.py)
        self.max_capacity = max_capacity
        # A GPU gets the whole budget at once (memory is known at load, not at
        # the 40th message); the CPU grows as chats get longer.
        self.initial_capacity = max_capacity if preallocate else min(max_capacity, GROWTH_STEP)
        self.plan: StepPlan | None = None
        super().__init__(layers=[SlotLayer(self) for _ in range(num_layers)])

    def current_plan(self) -> StepPlan:
        assert self.plan is not None, "the model ran outside HfRunner.forward"
        return self.plan

    def nbytes(self) -> int:
        return sum(layer.nbytes() for layer in self.layers if isinstance(layer, SlotLayer))

    def copy_prefix(self, source: int, target: int, length: int) -> None:
        """Give `target` the keys and values of `source`'s first `length` positions, in every layer.

        A copy, not a share: each slot owns its rows, so either may then be
        cut or overwritten without touching the other. Positions are the same
        in both slots, so the rotary embedding already in the keys stays right.
        """
        for layer in self.layers:
            if isinstance(layer, SlotLayer) and layer.keys is not None and layer.values is not None:
                layer.keys[target, :length] = layer.keys[source, :length]
                layer.values[target, :length] = layer.values[source, :length]

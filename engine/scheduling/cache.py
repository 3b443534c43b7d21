"""What a slot's KV cache keeps of a new turn: the longest start of its prompt, its own or another slot's.

A chat keeps its slot's cache between turns, so a new turn feeds only what follows the longest
common prefix; another slot may hold a longer start of the same prompt (a shared system prompt, the
same question in two tabs), which is copied rather than computed again. A cache that cannot drop a
tail (sliding-window or recurrent) starts clean instead.
"""

from __future__ import annotations

from engine.runners.base import Runner
from engine.sequence import common_prefix_length
from engine.slots import MIN_SHARED_PREFIX, Slot, SlotTable


def reuse_cache(runner: Runner, slots: SlotTable, prompt: list[int], slot: Slot) -> int:
    """Leave in the slot's cache the longest start of `prompt` it can have; return its length."""
    reuse = min(common_prefix_length(slot.cached, prompt), len(prompt) - 1)
    donor, shared = slots.donor_for(prompt, slot)
    if donor is not None and shared >= reuse + MIN_SHARED_PREFIX and runner.copy_prefix(
        donor.index, slot.index, shared
    ):
        slot.cached = donor.cached[:shared]
        return shared
    if reuse < len(slot.cached):
        reuse = cut_cache(runner, slot, reuse)
    return reuse


def cut_cache(runner: Runner, slot: Slot, keep: int) -> int:
    """Drop the slot's cache from position `keep` on; return where it ends now (0: it had to be cleared)."""
    if not runner.remove_from(slot.index, keep):
        runner.clear_slot(slot.index)
        keep = 0
    del slot.cached[keep:]
    return keep

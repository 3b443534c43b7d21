"""The slot table: which chat each slot of the KV cache holds, and which slot a turn gets.

It stands beside the scheduler as nano-vllm's BlockManager stands beside its
scheduler: the scheduler plans and updates steps; the table knows what every
slot caches, for which chat, since when, and what runs in it. A turn goes to
its chat's own idle slot; else the idle slot whose cache is mostly the start of
this prompt (an API client sends its whole conversation again under a new id,
as llama-server's slot similarity finds); else a free one; else the least
recently used idle slot, whose chat is forgotten and will re-read its
conversation later. A prompt that starts like another slot's cache can copy
that start from a donor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

from engine.sequence import Sequence, common_prefix_length

# Below this many tokens a copy saves less than it costs to look for.
MIN_SHARED_PREFIX = 16
# A chat without a slot of its own takes over another chat's idle slot only when the
# prompt continues most of what that slot caches: a shared system prompt alone is not
# enough (the donor copy shares that without taking the other chat's conversation away).
SIMILAR_SHARE = 0.5


@dataclass
class Slot:
    index: int
    chat_id: str | None = None  # whose cache this slot holds
    cached: list[int] = field(default_factory=list)  # tokens in the KV cache
    last_used: float = 0.0
    sequence: Sequence | None = None  # the running turn, if any


class SlotTable:
    """Bookkeeping of the runner's slots; `clear_cache` empties one slot's KV cache in the runner."""

    def __init__(self, count: int, clear_cache: Callable[[int], None]) -> None:
        self._slots = [Slot(index) for index in range(count)]
        self._clear_cache = clear_cache

    def __len__(self) -> int:
        return len(self._slots)

    def __iter__(self) -> Iterator[Slot]:
        return iter(self._slots)

    def __getitem__(self, index: int) -> Slot:
        return self._slots[index]

    # ------------------------------------------------------------ running turns

    def running(self) -> list[tuple[Slot, Sequence]]:
        return [(slot, slot.sequence) for slot in self._slots if slot.sequence is not None]

    def busy(self) -> int:
        return sum(1 for slot in self._slots if slot.sequence is not None)

    def occupy(self, slot: Slot, sequence: Sequence) -> None:
        if slot.sequence is not None:
            raise ValueError(f"slot {slot.index} already runs a turn of chat {slot.sequence.chat_id}")
        slot.chat_id, slot.sequence = sequence.chat_id, sequence

    def holding(self, sequence: Sequence) -> Slot | None:
        """The slot running `sequence`; None while it waits."""
        return next((slot for slot in self._slots if slot.sequence is sequence), None)

    def release(self, sequence: Sequence, now: float) -> Slot | None:
        """The turn is over; its slot keeps the chat's cache for the next turn."""
        slot = self.holding(sequence)
        if slot is not None:
            slot.sequence, slot.last_used = None, now
        return slot

    # ------------------------------------------------------------ choosing a slot

    def slot_for(self, chat_id: str, prompt: list[int] | None = None) -> Slot | None:
        """The chat's own idle slot, the idle slot `prompt` continues, a free one,
        or the least recently used idle one (forgotten)."""
        idle = [slot for slot in self._slots if slot.sequence is None]
        own = next((slot for slot in idle if slot.chat_id == chat_id), None)
        if own is not None:
            return own
        similar = self.similar_slot(prompt, idle) if prompt else None
        if similar is not None:
            return similar
        free = next((slot for slot in idle if slot.chat_id is None), None)
        if free is not None:
            return free
        if not idle:
            return None
        least_recent = min(idle, key=lambda slot: slot.last_used)
        self.forget(least_recent)
        return least_recent

    def similar_slot(self, prompt: list[int], idle: list[Slot]) -> Slot | None:
        """The idle slot whose cache `prompt` shares the longest start with, if that start is most
        of the cache and worth keeping (MIN_SHARED_PREFIX, SIMILAR_SHARE)."""
        best, best_length = None, MIN_SHARED_PREFIX - 1
        for slot in idle:
            length = common_prefix_length(slot.cached, prompt)
            if length > best_length and length >= SIMILAR_SHARE * len(slot.cached):
                best, best_length = slot, length
        return best

    def donor_for(self, prompt: list[int], target: Slot) -> tuple[Slot | None, int]:
        """The other slot caching the longest start of `prompt`, and its length (never the whole prompt)."""
        best, best_length = None, 0
        for slot in self._slots:
            if slot is not target and slot.cached:
                length = min(common_prefix_length(slot.cached, prompt), len(prompt) - 1)
                if length > best_length:
                    best, best_length = slot, length
        return best, best_length

    def prefix_being_computed(self, sequence: Sequence) -> bool:
        """Is a running prompt computing a long start of this one right now? Then wait and copy it."""
        own = max((common_prefix_length(slot.cached, sequence.prompt) for slot in self._slots
                   if slot.chat_id == sequence.chat_id), default=0)
        for _, running in self.running():
            shared = min(common_prefix_length(running.prompt, sequence.prompt), len(sequence.prompt) - 1)
            if shared >= own + MIN_SHARED_PREFIX and running.computed < shared:
                return True
        return False

    # ------------------------------------------------------------ forgetting

    def forget(self, slot: Slot) -> None:
        """Drop the slot's cache, here and in the runner; a turn running in it must be finished first."""
        self._clear_cache(slot.index)
        slot.chat_id, slot.cached = None, []

    def forget_chat(self, chat_id: str) -> None:
        for slot in self._slots:
            if slot.chat_id == chat_id:
                self.forget(slot)

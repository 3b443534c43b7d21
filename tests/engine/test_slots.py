"""The slot table on its own: which slot a turn gets, eviction, donors, prefixes being computed."""

from __future__ import annotations

import pytest

from engine.detokenizer import ByteDetokenizer
from engine.protocol import SamplingParams
from engine.sequence import Sequence
from engine.slots import MIN_SHARED_PREFIX, SlotTable


def turn(chat_id: str, prompt: list[int]) -> Sequence:
    return Sequence(chat_id, prompt, SamplingParams(temperature=0), ByteDetokenizer(lambda token: b""))


def table_of(count: int) -> tuple[SlotTable, list[int]]:
    cleared: list[int] = []
    return SlotTable(count, cleared.append), cleared


def test_a_chat_gets_its_own_idle_slot_then_a_free_one() -> None:
    table, cleared = table_of(3)
    table[1].chat_id, table[1].cached = "a", [1, 2, 3]
    assert table.slot_for("a") is table[1]
    assert table.slot_for("b") is table[0]
    table.occupy(table[0], turn("b", [4]))
    assert table.slot_for("c") is table[2]
    assert cleared == []


def test_with_no_free_slot_the_least_recently_used_idle_one_is_forgotten() -> None:
    table, cleared = table_of(3)
    for index, (chat, used) in enumerate([("a", 5.0), ("b", 2.0), ("c", 9.0)]):
        table[index].chat_id, table[index].cached, table[index].last_used = chat, [index] * 4, used
    table.occupy(table[1], turn("b", [7]))  # b is older but answering: not a candidate
    taken = table.slot_for("d")
    assert taken is table[0] and cleared == [0]
    assert (taken.chat_id, taken.cached) == (None, [])
    assert (table[2].chat_id, table[2].cached) == ("c", [2] * 4)


def test_no_slot_while_every_slot_answers() -> None:
    table, cleared = table_of(2)
    table.occupy(table[0], turn("a", [1]))
    table.occupy(table[1], turn("b", [2]))
    assert table.slot_for("c") is None and cleared == []
    with pytest.raises(ValueError, match="slot 0 already runs a turn of chat a"):
        table.occupy(table[0], turn("c", [3]))


def test_release_keeps_the_cache_for_the_chats_next_turn() -> None:
    table, cleared = table_of(2)
    sequence = turn("a", [1, 2])
    table.occupy(table[1], sequence)
    table[1].cached = [1, 2, 3]
    assert table.holding(sequence) is table[1] and table.busy() == 1
    assert table.running() == [(table[1], sequence)]
    assert table.release(sequence, now=42.0) is table[1]
    assert (table[1].sequence, table[1].chat_id, table[1].cached, table[1].last_used) == (None, "a", [1, 2, 3], 42.0)
    assert table.holding(sequence) is None and table.release(sequence, now=50.0) is None
    assert table.busy() == 0 and cleared == []


def test_the_donor_is_the_other_slot_with_the_longest_shared_start_never_the_whole_prompt() -> None:
    table, _ = table_of(4)
    prompt = list(range(40))
    table[0].cached = list(range(10)) + [99]
    table[1].cached = list(range(50))  # holds all of it and more
    table[2].cached = list(range(30))
    assert table.donor_for(prompt, target=table[3]) == (table[1], 39)  # the last token must be fed to sample
    assert table.donor_for(prompt, target=table[1]) == (table[2], 30)
    assert table.donor_for([500, 501], target=table[3]) == (None, 0)


def test_a_turn_waits_while_a_running_prompt_computes_a_long_start_of_it() -> None:
    table, _ = table_of(2)
    system = list(range(MIN_SHARED_PREFIX + 4))
    running = turn("a", system + [100, 101])
    table.occupy(table[0], running)
    waiting = turn("b", system + [200])
    running.computed = 3
    assert table.prefix_being_computed(waiting)
    running.computed = len(system)  # done: b can copy it now
    assert not table.prefix_being_computed(waiting)
    running.computed = 3
    table[1].chat_id, table[1].cached = "b", system[:4]  # b's own cache holds part of it already
    assert table.prefix_being_computed(waiting)  # 20 shared >= 4 own + 16: worth waiting for
    table[1].cached = system[:8]
    assert not table.prefix_being_computed(waiting)  # 20 < 8 + 16: b computes it itself
    table[1].chat_id, table[1].cached = None, []
    short = turn("c", system[: MIN_SHARED_PREFIX - 1] + [300])  # too short a start to wait for
    assert not table.prefix_being_computed(short)

def test_forgetting_a_chat_clears_its_slot_here_and_in_the_runner_only() -> None:
    table, cleared = table_of(3)
    for index, chat in enumerate("abc"):
        table[index].chat_id, table[index].cached = chat, [index]
    table.forget_chat("b")
    assert cleared == [1]
    assert [(slot.chat_id, slot.cached) for slot in table] == [("a", [0]), (None, []), ("c", [2])]


def test_a_new_chat_takes_the_idle_slot_its_prompt_continues_over_a_free_one() -> None:
    """An API client sends its conversation again under a new chat id: it finds the slot holding it."""
    table, cleared = table_of(3)
    first_turn = list(range(100, 160))
    table[1].chat_id, table[1].cached, table[1].last_used = "api-1", list(first_turn), 5.0
    table[2].chat_id, table[2].cached, table[2].last_used = "api-0", list(range(40)), 1.0  # older, unrelated
    assert table.slot_for("api-2", first_turn + [7, 8, 9]) is table[1]
    assert table.slot_for("api-3", [1, 2, 3]) is table[0]  # nothing to continue: the free slot
    assert cleared == [] and table[1].chat_id == "api-1"  # the scheduler's occupy() hands it over


def test_the_longest_continued_cache_wins_and_the_chats_own_slot_comes_first() -> None:
    table, _ = table_of(3)
    conversation = list(range(200, 300))
    table[0].chat_id, table[0].cached = "x", conversation[:40]
    table[1].chat_id, table[1].cached = "y", conversation[:80]
    table[2].chat_id, table[2].cached = "z", [1] * 10
    assert table.slot_for("new", conversation) is table[1]
    assert table.slot_for("z", conversation) is table[2]  # its own idle slot, whatever the others hold


def test_a_shared_system_prompt_alone_does_not_take_a_tabs_slot() -> None:
    """The common start must cover most of the other slot's cache; a donor copy shares the rest."""
    table, cleared = table_of(2)
    system = list(range(30))
    table[0].chat_id, table[0].cached, table[0].last_used = "tab", system + list(range(500, 540)), 3.0
    table[1].chat_id, table[1].cached, table[1].last_used = "tab2", system + list(range(600, 700)), 1.0
    taken = table.slot_for("api-1", system + [900, 901])
    assert taken is table[1] and cleared == [1]  # no similar slot: the least recently used one, forgotten
    assert table[0].chat_id == "tab" and len(table[0].cached) == 70


def test_a_short_common_start_is_not_worth_a_slot() -> None:
    table, _ = table_of(2)
    table[0].chat_id, table[0].cached = "a", list(range(MIN_SHARED_PREFIX - 1))
    assert table.slot_for("b", list(range(MIN_SHARED_PREFIX - 1)) + [99]) is table[1]  # the free one
    table[0].cached = list(range(MIN_SHARED_PREFIX))
    assert table.slot_for("b", list(range(MIN_SHARED_PREFIX)) + [99]) is table[0]

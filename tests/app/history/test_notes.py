"""Memory notes and the memory switch in the history database, through a connection of their own beside the store's."""

from __future__ import annotations

from pathlib import Path

from app.history.notes import HistoryTools
from app.history.store import HistoryStore
from engine.tools.builtin.memory import Memory, notes_prompt


def test_notes_are_saved_listed_edited_turned_off_and_forgotten_beside_the_store(tmp_path: Path) -> None:
    store = HistoryStore.open(tmp_path / "history.sqlite3")  # migrates: the notes table is there
    tools = HistoryTools(store.path)
    memory = Memory(tools)
    assert memory.run({"action": "save", "text": "  Uses metric units. "}).text == "Saved as note 1."
    memory.run({"action": "save", "text": "Lives in Ghent."})
    assert memory.run({"action": "list"}).text == "1: Uses metric units.\n2: Lives in Ghent."
    assert tools.update(2, enabled=False) and tools.update(1, text="Uses metric units, and 24-hour time.")
    assert memory.run({"action": "list"}).text == "1: Uses metric units, and 24-hour time."  # a note turned off is hidden
    assert notes_prompt(tools.notes()).endswith("\n- Uses metric units, and 24-hour time.")
    assert memory.run({"action": "forget", "id": 1}).text == "Note 1 was deleted."
    assert memory.run({"action": "forget", "id": 1}).is_error
    assert [(note.id, note.enabled) for note in tools.notes()] == [(2, False)]
    tools.close()
    store.close()


def test_a_chat_s_memory_switch_is_stored_with_the_chat(tmp_path: Path) -> None:
    store = HistoryStore.open(tmp_path / "history.sqlite3")
    chat = store.create_chat("Holiday")
    tools = HistoryTools(store.path)
    assert not tools.memory_off(chat.id) and not tools.memory_off("not stored yet")
    assert tools.set_memory_off(chat.id, True)
    assert tools.memory_off(chat.id)
    store.delete_chat(chat.id)
    assert [hit.chat_id for hit in tools.search_chats("holiday", 5)] == []
    tools.close()
    store.close()

"""HistoryStore's branch pointers on a real SQLite file: a new alternative becomes the active one.

The active path falls back to the newest alternative where none is chosen, so these switch to an
older one first: only the pointer that saving a message moves can bring the new one back.
"""

from __future__ import annotations

from pathlib import Path

from app.history.store import HistoryStore


def _texts(store: HistoryStore, chat_id: str) -> list[str]:
    return [m.text for m in store.active_path(chat_id)]


def test_a_new_alternative_after_switching_back_is_the_active_one(tmp_path: Path) -> None:
    store = HistoryStore.open(tmp_path / "history.sqlite3")
    try:
        chat = store.create_chat()
        question = store.add_message(chat.id, "user", "Name a fruit.")
        first = store.add_message(chat.id, "assistant", "Apple.", question.id)
        store.add_message(chat.id, "assistant", "Pear.", question.id)
        store.select_message(first.id)  # "< 1/2": back to the first answer
        assert _texts(store, chat.id) == ["Name a fruit.", "Apple."]
        third = store.regenerate(first.id)
        store.finish_message(third.id, "Plum.")
        assert _texts(store, chat.id) == ["Name a fruit.", "Plum."]

        store.select_message(question.id)
        edited = store.edit_message(question.id, "Name a vegetable.")
        store.select_message(question.id)  # the first question is chosen again, with its answer
        assert _texts(store, chat.id) == ["Name a fruit.", "Plum."]
        store.add_message(chat.id, "user", "Name a colour.")  # a second first question: a new root
        assert _texts(store, chat.id) == ["Name a colour."]
        assert [m.text for m in store.siblings(edited.id)] == ["Name a fruit.", "Name a vegetable.", "Name a colour."]
    finally:
        store.close()

"""A stored comparison on a real SQLite file: its panes read back, and an export imported keeps them."""

from __future__ import annotations

import json
from pathlib import Path

from app.history.comparison import compare_settings, is_comparison, stored_panes
from app.history.store import HistoryStore


def stored_comparison(store: HistoryStore) -> str:
    """Two panes below one question; the second pane has a follow-up."""
    chat = store.create_chat("Compare: colours", "A, B", {"system_prompt": "Be brief."}, open_tab=False)
    question = store.add_message(chat.id, "user", "Name a colour")
    first = store.add_message(chat.id, "assistant", "Red.", question.id)
    second = store.add_message(chat.id, "assistant", "Blue.", question.id)
    store.update_chat_settings(chat.id, compare_settings([{"model": "/m/a.gguf", "name": "A", "answer": first.id},
                                                          {"model": "/m/b.gguf", "name": "B", "answer": second.id}]))
    again = store.add_message(chat.id, "user", "And a fruit?", second.id)
    store.add_message(chat.id, "assistant", "Plum.", again.id)
    return chat.id


def texts(store: HistoryStore, chat_id: str) -> list[tuple[str, str, list[str]]]:
    return [(p.model, p.name, [m.text for m in p.messages]) for p in stored_panes(store.load_chat(chat_id))]


def test_a_comparison_reads_back_as_its_panes_and_survives_export_and_import(tmp_path: Path) -> None:
    store = HistoryStore.open(tmp_path / "history.sqlite3")
    try:
        chat_id = stored_comparison(store)
        expected = [("/m/a.gguf", "A", ["Name a colour", "Red."]),
                    ("/m/b.gguf", "B", ["Name a colour", "Blue.", "And a fruit?", "Plum."])]
        assert texts(store, chat_id) == expected
        assert not store.chat(chat_id).is_open and chat_id not in [c.id for c in store.open_tabs()]
        exported = json.loads(store.export_json(chat_id))
        assert [(p["model"], [m["content"] for m in p["messages"]]) for p in exported["compare"]] == [
            (model, messages) for model, _, messages in expected]
        assert exported["messages"][0] == {"role": "system", "content": "Be brief."}
        imported = store.import_json(json.dumps(exported))
        assert is_comparison(imported.settings) and imported.id != chat_id
        assert texts(store, imported.id) == expected, "new ids: the panes follow the order of the answers"
        markdown = store.export_markdown(chat_id)
        assert markdown.index("## A") < markdown.index("Red.") < markdown.index("## B") < markdown.index("Plum.")
    finally:
        store.close()

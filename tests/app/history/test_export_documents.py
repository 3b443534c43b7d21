"""A chat's attached files in its exports: listed in the Markdown, with their text in the JSON."""

from __future__ import annotations

import json
from pathlib import Path

from app.history.store import HistoryStore
from engine.documents.extract import Document, Page
from engine.documents.index import DocumentIndex, index_path


def test_exports_list_the_chats_attached_files(tmp_path: Path) -> None:
    store = HistoryStore.open(tmp_path / "data" / "history.sqlite3")
    try:
        chat = store.create_chat(model="m")
        store.add_message(chat.id, "user", "What does the report say?")
        other = store.create_chat(model="m")
        index = DocumentIndex(index_path(tmp_path / "data" / "documents", chat.id))
        index.add(Document("report.pdf", "pdf", (Page(1, "Page one."), Page(2, "The planted sentence."))))
        index.add(Document("notes.md", "text", (Page(1, "# Notes"),)))
        index.close()
        markdown = store.export_markdown(chat.id)
        assert "Attached files:\n\n- report.pdf (pdf, 2 pages)\n- notes.md (text, 1 page)\n" in markdown
        documents = json.loads(store.export_json(chat.id))["hearth"]["documents"]
        assert [(d["name"], d["kind"]) for d in documents] == [("report.pdf", "pdf"), ("notes.md", "text")]
        assert documents[0]["pages"] == [{"number": 1, "text": "Page one."}, {"number": 2, "text": "The planted sentence."}]
        assert "Attached files" not in store.export_markdown(other.id)
        assert json.loads(store.export_json(other.id))["hearth"]["documents"] == []
    finally:
        store.close()

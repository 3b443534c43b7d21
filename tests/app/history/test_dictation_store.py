"""A spoken user message in the history: what the speech model heard is stored with it (schema 9), survives an
older database's migration, and travels through the JSON export and back in, with a line in the Markdown."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.history.records import HistoryImportError
from app.history.schema import migrate
from app.history.store import HistoryStore
from engine.protocol import Dictation

HEARD = Dictation("turn off the kitchen lights", "en", "whisper-base-ct2", 2.74)


@pytest.fixture
def store(tmp_path: Path):
    opened = HistoryStore.open(tmp_path / "data" / "history.sqlite3")
    yield opened
    opened.close()


def _spoken_chat(store: HistoryStore) -> str:
    chat = store.create_chat(model="SmolLM2")
    spoken = store.add_message(chat.id, "user", "Turn off the kitchen lights, please.", dictation=HEARD)
    answer = store.add_message(chat.id, "assistant", "Done.", spoken.id)
    store.add_message(chat.id, "user", "Thanks.", answer.id)  # typed
    return chat.id


def test_the_dictation_is_stored_with_its_message_and_typed_ones_have_none(store: HistoryStore) -> None:
    chat_id = _spoken_chat(store)
    assert [m.dictation for m in store.load_chat(chat_id).path()] == [HEARD, None, None]


def test_export_carries_it_and_the_import_brings_it_back(store: HistoryStore) -> None:
    chat_id = _spoken_chat(store)
    exported = store.export_json(chat_id)
    tree = json.loads(exported)["hearth"]["messages"]
    assert [m["dictation"] for m in tree] == [
        {"transcript": "turn off the kitchen lights", "language": "en", "model": "whisper-base-ct2", "seconds": 2.74},
        None, None]
    assert [m.dictation for m in store.load_chat(store.import_json(exported).id).path()] == [HEARD, None, None]
    markdown = store.export_markdown(chat_id)
    assert ('Turn off the kitchen lights, please.\n\n*Dictated (2.7 s, en, whisper-base-ct2). '
            'Heard: "turn off the kitchen lights"*\n') in markdown
    assert markdown.count("Dictated") == 1


def test_a_damaged_dictation_in_an_import_is_named(store: HistoryStore) -> None:
    document = json.loads(store.export_json(_spoken_chat(store)))
    document["hearth"]["messages"][0]["dictation"] = {"transcript": 7}
    with pytest.raises(HistoryImportError) as raised:
        store.import_json(json.dumps(document))
    assert str(raised.value) == ('The file: hearth message 1: "dictation" should be an object with a text "transcript" '
                                 'and a number "seconds".')


def test_a_version_8_database_gains_the_column_and_its_messages_were_typed(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    raw = sqlite3.connect(path, isolation_level=None)
    migrate(raw, target=8)
    raw.execute("INSERT INTO chats (id, title, created, updated, active_root_id) VALUES ('c1', 'Old', 1, 2, 'm1')")
    raw.execute("INSERT INTO messages (id, chat_id, role, text, created) VALUES ('m1', 'c1', 'user', 'typed', 1)")
    raw.close()
    store = HistoryStore.open(path)
    try:
        assert [(m.text, m.dictation) for m in store.active_path("c1")] == [("typed", None)]
    finally:
        store.close()

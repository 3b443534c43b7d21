"""A reasoning model's thinking (and room for tool calls) in the history: schema 4, streaming, search, export, import."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from app.history.records import HistoryImportError
from app.history.schema import MIGRATIONS, SCHEMA_VERSION, migrate
from app.history.store import HistoryStore
from engine.protocol import ToolCall

THOUGHT = "The user asks about zebras. Recall: stripes deter flies (quokka)."
ANSWER = "Zebras have stripes to keep biting flies away."


@pytest.fixture
def store(tmp_path: Path):
    opened = HistoryStore.open(tmp_path / "data" / "history.sqlite3")
    yield opened
    opened.close()


def _thought_answer(store: HistoryStore) -> tuple[str, str]:
    chat = store.create_chat(model="Qwen3")
    question = store.add_message(chat.id, "user", "Why do zebras have stripes?")
    answer = store.add_message(chat.id, "assistant", "", question.id, "streaming")
    assert store.update_streaming_text(answer.id, None, THOUGHT[:20])  # thinking first, no answer yet
    assert store.update_streaming_text(answer.id, ANSWER[:6], THOUGHT)
    store.finish_message(answer.id, ANSWER, timings={"reasoning_s": 12.0, "reasoning_tokens": 340},
                         finish_reason="stop", reasoning=None, tool_calls=(ToolCall("call_1", "lookup", '{"q": "zebra"}'),))
    return chat.id, answer.id


def test_a_version_3_database_is_rebuilt_without_losing_rows_branches_or_its_index(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    raw = sqlite3.connect(path, isolation_level=None)
    raw.execute("PRAGMA foreign_keys = ON")
    migrate(raw, target=3)
    raw.execute("INSERT INTO chats (id, title, created, updated, active_root_id) VALUES ('c1', 'Old', 1, 2, 'm1')")
    raw.execute("INSERT INTO messages (id, chat_id, role, text, created, active_child_id) VALUES"
                " ('m1', 'c1', 'user', 'ancient platypus', 1, 'm3')")
    for key, text in (("m2", "First answer."), ("m3", "Second answer.")):
        raw.execute("INSERT INTO messages (id, chat_id, parent_id, role, text, created, finish_reason) VALUES"
                    " (?, 'c1', 'm1', 'assistant', ?, 2, 'stop')", (key, text))
    seqs = raw.execute("SELECT id, seq FROM messages ORDER BY seq").fetchall()
    raw.close()

    store = HistoryStore.open(path)
    db = store._db
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS) == 9  # 5: pinned, 6: pictures, 7: memory notes, 8: folders, 9: dictation
    assert [tuple(row) for row in db.execute("SELECT id, seq FROM messages ORDER BY seq")] == seqs
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    assert db.execute("SELECT name FROM sqlite_master WHERE name LIKE 'messages_v3%'").fetchall() == []
    assert [h.message_id for h in store.search("platypus")] == ["m1"]  # the old index still points right
    assert [m.text for m in store.active_path("c1")] == ["ancient platypus", "Second answer."]
    assert [m.reasoning for m in store.active_path("c1")] == ["", ""]
    added = store.add_message("c1", "assistant", "A new platypus fact.", "m1")
    assert {h.message_id for h in store.search("platypus")} == {"m1", added.id}  # the triggers are back
    db.execute("INSERT INTO messages (id, chat_id, parent_id, role, text, created, tool_call_id) VALUES"
               " ('t1', 'c1', 'm3', 'tool', '{\"temp\": 21}', 3, 'call_1')")  # room for tool results
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO messages (id, chat_id, parent_id, role, created) VALUES ('x', 'c1', 'gone', 'user', 4)")
    store.close()


def test_thinking_streams_into_the_message_and_is_finished_with_it(store: HistoryStore) -> None:
    chat_id, answer_id = _thought_answer(store)
    saved = store.message(answer_id)
    assert (saved.text, saved.reasoning, saved.state) == (ANSWER, THOUGHT, "complete")
    assert saved.tool_calls == (ToolCall("call_1", "lookup", '{"q": "zebra"}'),)
    assert saved.timings == {"reasoning_s": 12.0, "reasoning_tokens": 340}
    assert [m.reasoning for m in store.active_path(chat_id)] == ["", THOUGHT]


def test_a_thinking_cut_short_before_its_answer_is_kept_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    store = HistoryStore.open(path)
    chat = store.create_chat()
    question = store.add_message(chat.id, "user", "Think hard.")
    answer = store.add_message(chat.id, "assistant", "", question.id, "streaming")
    store.update_streaming_text(answer.id, None, "Step one")
    store.close()  # a killed process: nothing else was written
    store = HistoryStore.open(path)
    assert store.mark_interrupted_on_startup() == 1
    saved = store.message(answer.id)
    store.close()
    assert (saved.text, saved.reasoning, saved.state) == ("", "Step one", "interrupted")


def test_search_finds_the_answer_but_not_the_thinking(store: HistoryStore) -> None:
    _, answer_id = _thought_answer(store)
    assert [h.message_id for h in store.search("biting flies")] == [answer_id]
    assert store.search("quokka") == []  # only in the thinking: folded away, so not a hit


def test_markdown_export_folds_the_thinking_above_the_answer(store: HistoryStore) -> None:
    chat_id, _ = _thought_answer(store)
    markdown = store.export_markdown(chat_id)
    block = f"## Assistant\n\n<details><summary>Thinking</summary>\n\n{THOUGHT}\n\n</details>\n\n{ANSWER}\n"
    assert block in markdown
    assert markdown.count("<details>") == 1  # the question has no thinking


def test_thinking_cannot_close_its_markdown_block_early(store: HistoryStore) -> None:
    chat = store.create_chat()
    question = store.add_message(chat.id, "user", "Q")
    answer = store.add_message(chat.id, "assistant", "", question.id, "streaming")
    store.finish_message(answer.id, "A", reasoning="a </details> tag")
    markdown = store.export_markdown(chat.id)
    assert markdown.count("</details>") == 1 and "a &lt;/details> tag" in markdown


def test_json_export_has_the_field_and_imports_back(store: HistoryStore) -> None:
    chat_id, _ = _thought_answer(store)
    document = json.loads(store.export_json(chat_id))
    assert document["messages"] == [{"role": "user", "content": "Why do zebras have stripes?"},
                                     {"role": "assistant", "content": ANSWER, "reasoning": THOUGHT, "tool_calls": [
                                         {"id": "call_1", "type": "function",
                                          "function": {"name": "lookup", "arguments": '{"q": "zebra"}'}}]}]
    record = document["hearth"]["messages"][1]
    assert record["reasoning"] == THOUGHT and record["tool_calls"] == [
        {"id": "call_1", "name": "lookup", "arguments": '{"q": "zebra"}'}]
    imported = store.import_json(json.dumps(document))
    path = store.active_path(imported.id)
    assert [(m.text, m.reasoning) for m in path] == [("Why do zebras have stripes?", ""), (ANSWER, THOUGHT)]
    assert path[1].tool_calls == (ToolCall("call_1", "lookup", '{"q": "zebra"}'),)
    assert path[1].timings == {"reasoning_s": 12.0, "reasoning_tokens": 340}


def test_a_plain_openai_file_with_reasoning_content_imports_it(store: HistoryStore) -> None:
    document = {"messages": [{"role": "user", "content": "Hi"},
                             {"role": "assistant", "content": "Hello!", "reasoning_content": "Greet back."}]}
    chat = store.import_json(json.dumps(document))
    assert [m.reasoning for m in store.active_path(chat.id)] == ["", "Greet back."]


@pytest.mark.parametrize(("change", "expected"), [
    ({"reasoning": 5}, "\"reasoning\" should be text"),
    ({"tool_calls": {"id": "x"}}, "\"tool_calls\" should be a list"),
    ({"tool_calls": [{"id": "x", "name": "f"}]}, "tool call 1 should have text \"id\", \"name\" and \"arguments\""),
])
def test_a_bad_part_in_an_import_is_named(store: HistoryStore, change: dict[str, object], expected: str) -> None:
    chat_id, _ = _thought_answer(store)
    document = json.loads(store.export_json(chat_id))
    document["hearth"]["messages"][1].update(change)
    before = len(store.list_chats())
    with pytest.raises(HistoryImportError, match=expected):
        store.import_json(json.dumps(document))
    assert len(store.list_chats()) == before


def test_chat_settings_merge_and_keep_the_other_keys(store: HistoryStore) -> None:
    chat = store.create_chat(settings={"temperature": 0.2})
    store.update_chat_settings(chat.id, {"think": "off", "reasoning_budget": None})
    store.update_chat_settings(chat.id, {"reasoning_budget": 256})
    assert store.chat(chat.id).settings == {"temperature": 0.2, "think": "off", "reasoning_budget": 256}

"""HistoryStore on real SQLite files: branches, tabs, search, export/import, damaged and unwritable files."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from app.history.store import HistoryStore
from app.history.database import DATA_DIR_ENV, default_database_path
from app.chat.title import title_from_text
from app.history.records import MATCH_END, MATCH_START, HistoryError, HistoryImportError
from app.history.schema import MIGRATIONS, SCHEMA_VERSION


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "history.sqlite3"


@pytest.fixture
def store(db_path: Path):
    opened = HistoryStore.open(db_path)
    yield opened
    opened.close()


def _conversation(store: HistoryStore) -> dict[str, str]:
    """A chat with an edited question and a regenerated answer: two branches at two levels."""
    chat = store.create_chat(model="SmolLM2", settings={"temperature": 0.2, "seed": 7})
    q1 = store.add_message(chat.id, "user", "What is the capital of France?")
    a1 = store.add_message(chat.id, "assistant", "Paris.", q1.id)
    a2 = store.regenerate(a1.id)
    store.update_streaming_text(a2.id, "The capital is")
    store.finish_message(a2.id, "The capital is Paris.", prompt_tokens=12, generated_tokens=6,
                         timings={"total_s": 0.5}, finish_reason="stop")
    q2 = store.edit_message(q1.id, "What is the capital of Italy?")
    a3 = store.add_message(chat.id, "assistant", "Rome.", q2.id)
    return {"chat": chat.id, "q1": q1.id, "a1": a1.id, "a2": a2.id, "q2": q2.id, "a3": a3.id}


def _texts(store: HistoryStore, chat_id: str) -> list[str]:
    return [m.text for m in store.active_path(chat_id)]


def test_branches_survive_reopening(db_path: Path) -> None:
    store = HistoryStore.open(db_path)
    ids = _conversation(store)
    assert _texts(store, ids["chat"]) == ["What is the capital of Italy?", "Rome."]
    store.close()

    store = HistoryStore.open(db_path)
    snapshot = store.load_chat(ids["chat"])
    assert [m.text for m in snapshot.path()] == ["What is the capital of Italy?", "Rome."]
    assert snapshot.position(ids["q2"]) == (2, 2)
    assert [m.text for m in store.siblings(ids["q1"])] == ["What is the capital of France?", "What is the capital of Italy?"]
    store.select_message(ids["q1"])  # "< 1/2": back to the first question, with its latest answer chosen
    assert _texts(store, ids["chat"]) == ["What is the capital of France?", "The capital is Paris."]
    store.select_message(ids["a1"])
    store.close()

    store = HistoryStore.open(db_path)
    snapshot = store.load_chat(ids["chat"])
    assert [m.text for m in snapshot.path()] == ["What is the capital of France?", "Paris."]
    assert snapshot.position(ids["a1"]) == (1, 2)
    answer = store.message(ids["a2"])
    assert (answer.prompt_tokens, answer.generated_tokens, answer.timings, answer.finish_reason) == (12, 6, {"total_s": 0.5}, "stop")
    store.close()


def test_first_user_message_titles_the_chat(store: HistoryStore) -> None:
    chat = store.create_chat()
    assert store.chat(chat.id).title == "New chat"
    first = store.add_message(chat.id, "user", "\n  Explain   the borrow checker in Rust\nwith examples")
    store.add_message(chat.id, "user", "A second question", first.id)
    assert store.chat(chat.id).title == "Explain the borrow checker in Rust"
    store.rename_chat(chat.id, "  Rust notes ")
    assert store.chat(chat.id).title == "Rust notes"
    assert title_from_text("word " * 30) == "word word word word word word word word word…"
    assert title_from_text("   \n\t") == "New chat"
    titled = store.create_chat(title="Kept")
    store.add_message(titled.id, "user", "This must not become the title")
    assert store.chat(titled.id).title == "Kept"


def test_streaming_answer_is_saved_and_marked_interrupted_after_restart(db_path: Path) -> None:
    store = HistoryStore.open(db_path)
    chat = store.create_chat()
    question = store.add_message(chat.id, "user", "Count to five")
    answer = store.add_message(chat.id, "assistant", "", question.id, state="streaming")
    assert store.update_streaming_text(answer.id, "one two")
    assert store.update_streaming_text(answer.id, "one two three")
    store.close()  # as if killed before finish_message

    store = HistoryStore.open(db_path)
    assert store.mark_interrupted_on_startup() == 1
    saved = store.message(answer.id)
    assert (saved.text, saved.state) == ("one two three", "interrupted")
    assert not store.update_streaming_text(answer.id, "late write")  # only streaming answers take these
    assert (store.message(answer.id).text, store.mark_interrupted_on_startup()) == ("one two three", 0)
    store.close()


def test_open_tabs_order_current_tab_and_scroll_are_restored(db_path: Path) -> None:
    store = HistoryStore.open(db_path)
    first, second, third = (store.create_chat(title=name).id for name in ("one", "two", "three"))
    store.set_open_tabs([third, first], current=first)
    store.set_scroll_position(third, 0.75)
    store.close()

    store = HistoryStore.open(db_path)
    tabs = store.open_tabs()
    assert [chat.title for chat in tabs] == ["three", "one"]
    assert tabs[0].scroll_position == 0.75 and store.current_tab() == first
    assert not store.chat(second).is_open
    store.open_tab(second)
    store.close_tab(third)
    assert [chat.title for chat in store.open_tabs()] == ["one", "two"]
    store.close()


def test_delete_restore_and_purge(store: HistoryStore) -> None:
    chat = store.create_chat(title="Doomed")
    store.add_message(chat.id, "user", "zebra crossing")
    store.delete_chat(chat.id)
    assert chat.id not in [c.id for c in store.list_chats()]
    assert store.search("zebra") == [] and store.open_tabs() == []
    store.restore_chat(chat.id)
    assert [c.title for c in store.list_chats()] == ["Doomed"]
    assert [hit.snippet_text for hit in store.search("zebra")] == ["zebra crossing"]
    store.delete_chat(chat.id)
    assert store.purge_deleted() == 1
    assert store.list_chats(include_deleted=True) == []
    with pytest.raises(HistoryError) as raised:
        store.load_chat(chat.id)
    assert raised.value.kind == "missing"


def test_delete_message_takes_its_branch_along(store: HistoryStore) -> None:
    ids = _conversation(store)
    assert store.delete_message(ids["q2"]) == 2  # the edited question and its answer
    assert _texts(store, ids["chat"]) == ["What is the capital of France?", "The capital is Paris."]
    assert store.search("Rome") == []


def test_search_finds_text_in_a_closed_chat(db_path: Path) -> None:
    store = HistoryStore.open(db_path)
    ids = _conversation(store)
    other = store.create_chat(title="Café talk")
    store.add_message(other.id, "user", "The café <serves> crêpes")
    store.set_open_tabs([other.id])
    store.close()

    store = HistoryStore.open(db_path)
    hits = store.search("capital Paris")
    assert [(h.chat_id, h.message_id, h.chat_is_open) for h in hits] == [(ids["chat"], ids["a2"], False)]
    assert f"{MATCH_START}capital{MATCH_END}" in hits[0].snippet
    assert {h.message_id for h in store.search("capi")} == {ids["q1"], ids["q2"], ids["a2"]}  # prefix, any branch
    cafe = store.search("cafe crepes")  # accents do not matter
    assert [h.snippet_html for h in cafe] == ["The <b>café</b> &lt;serves&gt; <b>crêpes</b>"]
    assert store.search('"( AND OR NEAR') == [] and store.search("  ") == []  # query syntax is just text
    store.close()


def test_search_index_follows_streaming_updates(store: HistoryStore) -> None:
    chat = store.create_chat()
    answer = store.add_message(chat.id, "assistant", "", state="streaming")
    store.update_streaming_text(answer.id, "kangaroo")
    assert [h.message_id for h in store.search("kangaroo")] == [answer.id]
    store.finish_message(answer.id, "wallaby")
    assert store.search("kangaroo") == [] and [h.message_id for h in store.search("wallaby")] == [answer.id]


def test_migrates_a_version_1_database(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    raw = sqlite3.connect(db_path)
    for statement in MIGRATIONS[0]:
        raw.execute(statement)
    raw.execute("INSERT INTO chats (id, title, created, updated) VALUES ('c1', 'Old chat', 1, 2)")
    raw.execute("INSERT INTO messages (id, chat_id, role, text, created) VALUES ('m1', 'c1', 'user', 'ancient platypus', 1)")
    raw.execute("INSERT INTO messages (id, chat_id, parent_id, role, text, created) VALUES ('m2', 'c1', 'm1', 'assistant', 'Yes.', 2)")
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()

    store = HistoryStore.open(db_path)
    assert store._db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    assert store.chat("c1").pinned is False
    assert [h.message_id for h in store.search("platypus")] == ["m1"]
    assert _texts(store, "c1") == ["ancient platypus", "Yes."]
    assert store.chat("c1").is_open is False
    store.close()


def test_a_newer_schema_is_refused_and_left_alone(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    raw = sqlite3.connect(db_path)
    raw.execute("CREATE TABLE future (x)")
    raw.execute("PRAGMA user_version = 99")
    raw.commit()
    raw.close()
    with pytest.raises(HistoryError) as raised:
        HistoryStore.open(db_path)
    assert raised.value.kind == "newer" and "newer Hearth" in str(raised.value)
    assert sqlite3.connect(db_path).execute("PRAGMA user_version").fetchone()[0] == 99


def test_export_json_is_openai_messages_with_model_and_settings(store: HistoryStore) -> None:
    ids = _conversation(store)
    document = json.loads(store.export_json(ids["chat"]))
    assert document["model"] == "SmolLM2"
    assert document["settings"] == {"temperature": 0.2, "seed": 7}
    assert document["messages"] == [
        {"role": "user", "content": "What is the capital of Italy?"},
        {"role": "assistant", "content": "Rome."},
    ]
    assert len(document["hearth"]["messages"]) == 5  # every branch


def _normalized(exported: str) -> dict:
    """The export with message ids replaced by their position, so two imports compare equal."""
    document = json.loads(exported)
    tree = document["hearth"]
    position = {m["id"]: str(i) for i, m in enumerate(tree["messages"])}
    for message in tree["messages"]:
        for key in ("id", "parent_id", "active_child_id"):
            message[key] = position.get(message[key])
    tree["active_root_id"] = position.get(tree["active_root_id"])
    return document


def test_export_import_round_trip_is_lossless(store: HistoryStore) -> None:
    ids = _conversation(store)
    cut = store.add_message(ids["chat"], "user", "Ünïcødé ✓ and\nnew lines", ids["a3"])
    answer = store.add_message(ids["chat"], "assistant", "", cut.id, state="streaming")
    store.update_streaming_text(answer.id, "half an ans")
    store.mark_interrupted_on_startup()
    store.rename_chat(ids["chat"], "Capitals")
    exported = store.export_json(ids["chat"])

    imported = store.import_json(exported)
    assert imported.id != ids["chat"] and imported.title == "Capitals"
    again = store.export_json(imported.id)
    assert _normalized(again) == _normalized(exported)
    path = store.active_path(imported.id)
    assert [(m.role, m.text, m.state) for m in path][-2:] == [
        ("user", "Ünïcødé ✓ and\nnew lines", "complete"), ("assistant", "half an ans", "interrupted")]
    assert len(store.load_chat(imported.id).messages) == 7


def test_import_plain_openai_messages(store: HistoryStore) -> None:
    document = {"model": "gpt-x", "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Name a "}, {"type": "text", "text": "colour"}]},
        {"role": "assistant", "content": "Teal."},
    ]}
    chat = store.import_json(json.dumps(document))
    assert (chat.title, chat.model, chat.is_open) == ("Name a colour", "gpt-x", True)
    assert [(m.role, m.text) for m in store.active_path(chat.id)] == [("user", "Name a colour"), ("assistant", "Teal.")]
    assert chat.settings == {"system_prompt": "Be brief.", "panel": {"system_prompt": "Be brief."}}  # the chat's own


def _tree_with_forward_parent() -> str:
    return json.dumps({"messages": [{"role": "user", "content": "hi"}], "hearth": {"messages": [
        {"id": "b", "parent_id": "a", "role": "user", "content": "hi"}]}})


@pytest.mark.parametrize(("text", "expected"), [
    ("{not json", "is not valid JSON (line 1, column 2"),
    ("[1, 2]", 'has no "messages" list'),
    (json.dumps({"messages": [{"role": "function", "content": "x"}]}), "message 1 has role 'function'"),
    (json.dumps({"messages": [{"role": "user", "content": "ok"}, "oops"]}), "message 2 is not an object"),
    (json.dumps({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}), "no text \"content\""),
    (json.dumps({"messages": [], "settings": [1]}), '"settings" should be an object'),
    (json.dumps({"messages": [], "hearth": {"messages": 3}}), 'the "hearth" section has no "messages" list'),
    (_tree_with_forward_parent(), "refers to a parent that does not come before it"),
], ids=["not-json", "not-object", "bad-role", "bad-item", "image", "bad-settings", "bad-tree", "bad-parent"])
def test_bad_import_says_what_is_wrong_and_writes_nothing(store: HistoryStore, text: str, expected: str) -> None:
    store.create_chat(title="existing")
    with pytest.raises(HistoryImportError) as raised:
        store.import_json(text, "export.json")
    assert expected in str(raised.value) and str(raised.value).startswith("export.json")
    assert [c.title for c in store.list_chats()] == ["existing"]
    assert store._db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0


def test_import_file_errors_name_the_file(store: HistoryStore, tmp_path: Path) -> None:
    binary = tmp_path / "picture.json"
    binary.write_bytes(b"\xff\xd8\xff\xe0 not text")
    with pytest.raises(HistoryImportError, match="picture.json is not UTF-8 text"):
        store.import_file(binary)
    with pytest.raises(HistoryImportError, match="Cannot read .*missing.json"):
        store.import_file(tmp_path / "missing.json")
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"messages": [{"role": "user", "content": "from a file"}]}), encoding="utf-8")
    assert store.import_file(good).title == "from a file"


def test_an_import_that_fails_midway_leaves_nothing(store: HistoryStore) -> None:
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages + 2}")  # a disk that fills up during the import
    big = {"messages": [{"role": "user", "content": f"message {i} " + "x" * 4000} for i in range(40)]}
    with pytest.raises(HistoryError) as raised:
        store.import_json(json.dumps(big))
    assert raised.value.kind == "full"
    assert store.list_chats() == [] and store._db.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 0


def test_export_markdown(store: HistoryStore) -> None:
    ids = _conversation(store)
    store.rename_chat(ids["chat"], "Capitals")
    text = store.export_markdown(ids["chat"])
    assert text.startswith("# Capitals\n\nModel: `SmolLM2`")
    assert "## User\n\nWhat is the capital of Italy?\n\n## Assistant\n\nRome.\n" in text
    assert "France" not in text  # only the active branch


def test_a_damaged_file_is_moved_aside_and_a_fresh_one_started(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not a database" * 100)
    store = HistoryStore.open(db_path)
    aside = store.recovered_from
    assert aside is not None and aside.name.startswith("history.sqlite3.corrupt-")
    assert aside.read_bytes() == b"this is not a database" * 100
    chat = store.create_chat(title="fresh")
    assert [c.title for c in store.list_chats()] == ["fresh"] and store.chat(chat.id).title == "fresh"
    store.close()
    assert HistoryStore.open(db_path).recovered_from is None


def test_a_database_with_a_damaged_page_is_moved_aside(db_path: Path) -> None:
    store = HistoryStore.open(db_path)
    chat = store.create_chat()
    for i in range(300):
        store.add_message(chat.id, "user", f"message number {i} " * 20)
    store.close()  # the last connection checkpoints the WAL into the file
    size = db_path.stat().st_size
    with db_path.open("r+b") as file:
        file.seek(size // 2 // 4096 * 4096)
        file.write(b"\x0d\xff" * 2048)  # a b-tree page header of nonsense
    store = HistoryStore.open(db_path)
    assert store.recovered_from is not None and store.recovered_from.stat().st_size == size
    assert store.list_chats() == []
    store.close()


def test_an_unwritable_folder_gives_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(HistoryError) as raised:
        HistoryStore.open(blocker / "Hearth" / "history.sqlite3")
    message = str(raised.value)
    assert raised.value.kind == "readonly"
    assert "Could not create the chat history folder" in message and str(blocker) in message
    assert DATA_DIR_ENV in message and "stay in this window" in message


def _make_read_only(folder: Path) -> Callable[[], None] | None:
    """Make `folder` unwritable (chmod; as root, whom chmod does not stop, chattr +i); returns the undo."""
    if os.name != "posix":
        return None
    if os.geteuid() != 0:
        folder.chmod(0o500)
        return lambda: folder.chmod(0o700)
    if shutil.which("chattr") and subprocess.run(["chattr", "+i", str(folder)], check=False, capture_output=True).returncode == 0:
        return lambda: subprocess.run(["chattr", "-i", str(folder)], check=True)
    return None


def test_a_read_only_folder_gives_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir()
    undo = _make_read_only(folder)
    if undo is None:
        pytest.skip("cannot make a folder read-only here (root without chattr)")
    try:
        with pytest.raises(HistoryError) as raised:
            HistoryStore.open(folder / "history.sqlite3")
    finally:
        undo()
    assert raised.value.kind == "readonly" and f"Hearth cannot write to {folder}" in str(raised.value)
    assert not (folder / "history.sqlite3").exists()


def test_a_full_disk_gives_a_clear_error_and_keeps_what_was_saved(store: HistoryStore) -> None:
    chat = store.create_chat()
    answer = store.add_message(chat.id, "assistant", "", state="streaming")
    store.update_streaming_text(answer.id, "saved before the disk filled")
    pages = store._db.execute("PRAGMA page_count").fetchone()[0]
    store._db.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full"
    with pytest.raises(HistoryError) as raised:
        store.update_streaming_text(answer.id, "y" * 200_000)
    assert raised.value.kind == "full" and "is full. Free some space" in str(raised.value)
    assert store.message(answer.id).text == "saved before the disk filled"
    store._db.execute("PRAGMA max_page_count = 1073741823")  # space freed: the next write goes through
    store.update_streaming_text(answer.id, "y" * 200_000)
    assert store.message(answer.id).text == "y" * 200_000


def test_two_chats_streaming_at_once_lose_nothing(db_path: Path) -> None:
    setup = HistoryStore.open(db_path)
    answers = [setup.add_message(setup.create_chat().id, "assistant", "", state="streaming").id for _ in range(2)]
    setup.close()
    failures: list[BaseException] = []

    def stream(message_id: str, word: str) -> None:
        writer = HistoryStore.open(db_path)  # its own connection, as a second process would have
        try:
            text = ""
            for i in range(150):
                text += f"{word}{i} "
                writer.update_streaming_text(message_id, text)
            writer.finish_message(message_id, text + "end")
        except BaseException as error:  # noqa: BLE001 - reported by the main thread
            failures.append(error)
        finally:
            writer.close()

    threads = [threading.Thread(target=stream, args=(m, w), name=f"hearth-test-{w}") for m, w in zip(answers, "ab")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    reader = HistoryStore.open(db_path)
    for message_id, word in zip(answers, "ab"):
        saved = reader.message(message_id)
        assert saved.text == "".join(f"{word}{i} " for i in range(150)) + "end" and saved.state == "complete"
    reader.close()


def test_data_dir_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "elsewhere"))
    assert default_database_path() == tmp_path / "elsewhere" / "history.sqlite3"
    store = HistoryStore.open()
    assert store.path == tmp_path / "elsewhere" / "history.sqlite3" and store.path.exists()
    store.close()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(DATA_DIR_ENV, "relative")  # made absolute once, wherever the store opens it later
    assert default_database_path() == tmp_path / "relative" / "history.sqlite3"
    monkeypatch.delenv(DATA_DIR_ENV)
    assert default_database_path().parent.name == "Hearth"

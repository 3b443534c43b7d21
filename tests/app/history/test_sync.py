"""The window and the chat history together: chats saved as they stream, restored, listed, searched, exported."""

from __future__ import annotations

import json
from pathlib import Path

from app.history.store import HistoryStore
from app.history.database import default_database_path
from app.history.dialog import ChatListDialog
from app.history.sync import INTERRUPTED_NOTE
from tests.app.helpers import LONG, conversation, send_and_wait, wait_restored


def test_two_tabs_streaming_at_once_are_saved_and_restored_in_order(qtbot, make_window) -> None:
    window = make_window(max_new_tokens=12)
    wait_restored(qtbot, window)
    first = window.current_tab()
    first.input.setPlainText("Name a colour.")
    first.send()
    second = window.new_chat()
    send_and_wait(qtbot, second, "Name an animal.")
    qtbot.waitUntil(lambda: not first.answering, timeout=LONG)
    expected = [conversation(first), conversation(second)]
    ids = [first.chat_id, second.chat_id]
    window.close()
    again = make_window(wait_for_model=False)
    wait_restored(qtbot, again)
    tabs = again.chat_tabs()
    assert [tab.chat_id for tab in tabs] == ids
    assert [conversation(tab) for tab in tabs] == expected
    assert again.current_tab().chat_id == ids[1]  # the current tab is remembered too
    assert tabs[0].title == "Name a colour."
    assert all(len(messages) == 2 and messages[1][1].strip() for messages in expected)
    # the second window's first empty tab, replaced by the restored ones, is no chat: the list holds the two
    sidebar = again.sidebar.sidebar
    sidebar.refresh()
    qtbot.waitUntil(lambda: sorted(sidebar.chat_ids()) == sorted(ids), timeout=LONG)


def test_an_answer_cut_short_by_a_crash_comes_back_interrupted(qtbot, make_window) -> None:
    store = HistoryStore.open(default_database_path())
    chat = store.create_chat("Crashed", "", None)
    question = store.add_message(chat.id, "user", "Tell me a story.")
    answer = store.add_message(chat.id, "assistant", "Once upon a", question.id, "streaming")
    store.set_open_tabs([chat.id], chat.id)
    store.close()  # as a killed process leaves it: the answer still "streaming"
    window = make_window(max_new_tokens=8)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    assert window.tabs.count() == 1 and tab.chat_id == chat.id
    assert conversation(tab) == [("user", "Tell me a story."), ("assistant", "Once upon a")]
    assert tab.view.cards()[-1].footer.text() == INTERRUPTED_NOTE
    assert window.history_ui.report.interrupted_messages == 1
    assert tab.regenerate_button.isEnabled()
    tab.regenerate()
    qtbot.waitUntil(lambda: not tab.answering and tab.messages[-1].role == "assistant", timeout=LONG)
    new_text = tab.messages[-1].content
    window.close()
    store = HistoryStore.open(default_database_path())
    snapshot = store.load_chat(chat.id)
    alternatives = snapshot.siblings(answer.id)
    store.close()
    assert [m.text for m in alternatives] == ["Once upon a", new_text]  # the old answer stays a branch
    assert [m.state for m in alternatives] == ["interrupted", "complete"]
    assert [m.text for m in snapshot.path()] == ["Tell me a story.", new_text]


def test_a_closed_chat_is_found_by_search_reopened_renamed_and_deleted(qtbot, make_window) -> None:
    window = make_window(max_new_tokens=8)
    wait_restored(qtbot, window)
    first = window.current_tab()
    send_and_wait(qtbot, first, "Tell me about zebras and their stripes.")
    chat_id, shown = first.chat_id, conversation(first)
    window.new_chat()
    window.close_chat(window.tabs.indexOf(first))
    assert chat_id not in [tab.chat_id for tab in window.chat_tabs()]
    dialog = ChatListDialog(window.history_ui, window)
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: dialog.loaded >= 1, timeout=LONG)
    assert chat_id in dialog.chat_ids()
    dialog.search.setText("zebras")
    qtbot.waitUntil(lambda: dialog.loaded >= 2, timeout=LONG)
    assert dialog.chat_ids() == [chat_id]
    assert "zebras" in dialog.list.item(0).text()
    dialog.list.setCurrentRow(0)
    dialog.open_selected()
    qtbot.waitUntil(lambda: window.current_tab().chat_id == chat_id, timeout=LONG)
    assert conversation(window.current_tab()) == shown
    window.history_ui.rename_chat(chat_id, "Stripes")
    assert window.tabs.tabText(window.tabs.currentIndex()) == "Stripes"
    dialog.search.setText("")
    qtbot.waitUntil(lambda: dialog.loaded >= 3, timeout=LONG)
    assert "Stripes" in [dialog.list.item(row).toolTip() for row in range(dialog.list.count())]
    window.history_ui.delete_chat(chat_id)
    assert chat_id not in [tab.chat_id for tab in window.chat_tabs()]
    dialog.search.setText("zebras")
    qtbot.waitUntil(lambda: dialog.loaded >= 4, timeout=LONG)
    assert dialog.chat_ids() == []


def test_export_markdown_and_json_then_import_as_a_new_tab(qtbot, make_window, tmp_path: Path) -> None:
    window = make_window(max_new_tokens=8)
    wait_restored(qtbot, window)
    tab = window.current_tab()
    answer = send_and_wait(qtbot, tab, "Say something about rivers.")
    markdown, exported = tmp_path / "chat.md", tmp_path / "chat.json"
    window.history_ui.export_current("markdown", markdown)
    window.history_ui.export_current("json", exported)
    qtbot.waitUntil(lambda: markdown.exists() and exported.exists(), timeout=LONG)
    assert "Say something about rivers." in markdown.read_text(encoding="utf-8")
    document = json.loads(exported.read_text(encoding="utf-8"))
    assert [(m["role"], m["content"]) for m in document["messages"]] == [
        ("user", "Say something about rivers."), ("assistant", answer)]  # no system prompt: no system message
    assert document["settings"]["max_tokens"] == 8 and document["settings"]["seed"] == 0
    window.history_ui.import_path(exported)
    qtbot.waitUntil(lambda: window.tabs.count() == 2, timeout=LONG)
    imported = window.current_tab()
    assert imported.chat_id != tab.chat_id and conversation(imported) == conversation(tab)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    window.history_ui.import_path(bad)
    qtbot.waitUntil(lambda: "bad.json" in window.history_ui.problem_text, timeout=LONG)
    assert window.history_ui.label.isVisible() and window.tabs.count() == 2  # nothing half-imported


def test_an_unwritable_history_is_shown_and_chats_stay_in_memory(qtbot, make_window, tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("HEARTH_DATA_DIR", str(blocker / "data"))  # a folder cannot be made under a file
    window = make_window(max_new_tokens=8)
    wait_restored(qtbot, window)
    assert window.history_ui.label.isVisible()
    assert str(blocker) in window.history_ui.label.text() and "not saved" in window.history_ui.label.text()
    tab = window.current_tab()
    answer = send_and_wait(qtbot, tab, "Hello there.")
    assert conversation(tab) == [("user", "Hello there."), ("assistant", answer)]

"""The chat sidebar on a real window and history (scripted engine): search over bodies, pin, rename,
delete, click to open or switch, the answering dot, and Ctrl+B / width remembered."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.chat.tab import ChatTab
from app.history.sidebar import Sidebar
from app.settings.store import Settings
from app.window.mainwindow import MainWindow
from tests.app.helpers import LONG, wait_restored


def _chat(window: MainWindow, question: str, answer: str, tab: ChatTab | None = None) -> ChatTab:
    tab = tab or window.new_chat()
    tab.input.setPlainText(question)
    tab.send()
    window.bridge.answer(tab.chat_id, answer)  # type: ignore[attr-defined]
    return tab


def _sidebar(qtbot, window: MainWindow) -> Sidebar:  # type: ignore[no-untyped-def]
    wait_restored(qtbot, window)
    return window.sidebar.sidebar


def _wait_listed(qtbot, sidebar: Sidebar, expected: list[str]) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: sidebar.chat_ids() == expected, timeout=LONG)


def test_search_finds_a_word_from_a_message_body_and_titles(qtbot, scripted_window) -> None:
    window = scripted_window()
    sidebar = _sidebar(qtbot, window)
    first = _chat(window, "Tell me about horses", "Zebras have stripes.", window.current_tab())
    second = _chat(window, "Name a colour", "Ochre.")
    _wait_listed(qtbot, sidebar, [second.chat_id, first.chat_id])  # the most recent first
    sidebar.search.setText("zebras")  # only in the answer's text, not in any title
    _wait_listed(qtbot, sidebar, [first.chat_id])
    assert "Zebras have stripes." in sidebar.list.item(0).text()  # the matching message under the title
    sidebar.search.setText("colour")  # a title
    _wait_listed(qtbot, sidebar, [second.chat_id])
    sidebar.search.setText("platypus")
    qtbot.waitUntil(lambda: sidebar.list.count() == 1 and sidebar.list.item(0).text() == "Nothing found.", timeout=LONG)


def test_pin_rename_and_delete(qtbot, scripted_window) -> None:
    window = scripted_window()
    sidebar = _sidebar(qtbot, window)
    older = _chat(window, "Older question", "Older answer.", window.current_tab())
    newer = _chat(window, "Newer question", "Newer answer.")
    _wait_listed(qtbot, sidebar, [newer.chat_id, older.chat_id])
    menu = sidebar.context_menu(older.chat_id)
    assert [a.text() for a in menu.actions() if a.text()] == [
        "Open", "Pin", "Rename…", "Move to folder", "Export as Markdown…", "Export as JSON…", "Delete…"]
    menu.actions()[1].trigger()  # Pin
    _wait_listed(qtbot, sidebar, [older.chat_id, newer.chat_id])
    assert sidebar.list.item(0).text() == "Pinned" and sidebar.chat(older.chat_id).pinned
    assert [a.text() for a in sidebar.context_menu(older.chat_id).actions()][1] == "Unpin"
    sidebar.rename(newer.chat_id, "Renamed chat")
    qtbot.waitUntil(lambda: sidebar.chat(newer.chat_id) is not None and sidebar.chat(newer.chat_id).title == "Renamed chat",
                    timeout=LONG)
    assert newer.title == "Renamed chat" and window.tabs.tabText(window.tabs.indexOf(newer)) == "Renamed chat"
    sidebar.delete(older.chat_id)
    _wait_listed(qtbot, sidebar, [newer.chat_id])
    assert older.chat_id not in [tab.chat_id for tab in window.chat_tabs()]  # its tab closed too
    renames: list[str] = []
    sidebar.ask_rename = renames.append  # type: ignore[method-assign]  # instead of the modal dialog
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    sidebar.list.setCurrentRow(0)
    sidebar.list.setFocus()
    qtbot.keyClick(sidebar.list, Qt.Key.Key_F2)  # the list's F2 (rename the chat), not the window's (the tab)
    assert renames == [newer.chat_id] and window.tabs.rename_editor is None


def test_a_click_opens_a_closed_chat_or_switches_to_its_tab(qtbot, scripted_window) -> None:
    window = scripted_window()
    sidebar = _sidebar(qtbot, window)
    first = _chat(window, "First question", "First answer.", window.current_tab())
    second = _chat(window, "Second question", "Second answer.")
    chat_id = first.chat_id
    window.close_tab(first)
    _wait_listed(qtbot, sidebar, [second.chat_id, chat_id])
    assert sidebar.item(second.chat_id).font().bold() and not sidebar.item(chat_id).font().bold()  # bold: open

    def click(chat_id: str) -> None:
        item = sidebar.item(chat_id)
        qtbot.mouseClick(sidebar.list.viewport(), Qt.MouseButton.LeftButton, pos=sidebar.list.visualItemRect(item).center())

    click(chat_id)
    qtbot.waitUntil(lambda: window.current_tab().chat_id == chat_id, timeout=LONG)
    reopened = window.current_tab()
    assert [m.content for m in reopened.messages] == ["First question", "First answer."]
    assert window.tabs.count() == 2
    click(second.chat_id)
    qtbot.waitUntil(lambda: window.current_tab() is second)
    assert window.tabs.count() == 2  # switched, not opened again


def test_a_chat_answering_in_the_background_shows_a_dot(qtbot, scripted_window) -> None:
    window = scripted_window()
    sidebar = _sidebar(qtbot, window)
    busy = window.current_tab()
    busy.input.setPlainText("A long story please")
    busy.send()  # the scripted engine does not answer yet
    window.new_chat()  # busy is now in the background
    qtbot.waitUntil(lambda: sidebar.answering_chat_ids() == [busy.chat_id], timeout=LONG)
    window.bridge.answer(busy.chat_id, "Once upon a time.")  # type: ignore[attr-defined]
    qtbot.waitUntil(lambda: sidebar.answering_chat_ids() == [])


def test_ctrl_b_hides_it_and_its_width_and_visibility_are_remembered(qtbot, scripted_window) -> None:
    window = scripted_window()
    _sidebar(qtbot, window)
    assert window.sidebar.visible
    window.sidebar.splitter.setSizes([300, 700])
    window.sidebar.save()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier)
    assert not window.sidebar.visible
    stored = Settings.load()
    assert stored.get("window.sidebar_visible") is False and stored.get("window.sidebar_width") == 300
    window.close()
    again = scripted_window()
    assert not again.sidebar.visible

"""Folders of chats: stored in the history database (version 8), and in the real sidebar of a real window
(scripted engine): pinned first, then folders, then the rest; a chat dragged onto a folder or moved by the
context menu; a click folds a folder and the fold is remembered after a restart; rename; a search opens the
folders with matches; delete a folder keeping its chats or with them (their tabs close)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from app.chat.tab import ChatTab
from app.history import folders
from app.history.chat_list import FOLDER_ID, IS_FOLDER
from app.history.schema import MIGRATIONS, migrate
from app.history.sidebar import Sidebar
from app.history.sidebar_menus import folder_menu
from app.history.store import HistoryStore
from app.window.mainwindow import MainWindow
from tests.app.helpers import LONG, wait_restored

# ---------------------------------------------------------------- the store


def test_folders_are_stored_listed_renamed_folded_and_deleted(tmp_path: Path) -> None:
    store = HistoryStore.open(tmp_path / "history.sqlite3")
    chats = [store.create_chat(title) for title in ("One", "Two", "Three")]
    folders.create_folder(store, "f-work", "  Work \n stuff ")
    folders.create_folder(store, "f-home", "Home")
    assert [(f.id, f.name, f.position) for f in folders.list_folders(store)] == [
        ("f-work", "Work stuff", 0), ("f-home", "Home", 1)]
    folders.move_chat(store, chats[0].id, "f-work")
    folders.move_chat(store, chats[1].id, "f-work")
    folders.move_chat(store, chats[2].id, "f-home")
    assert {chat.title: chat.folder_id for chat in store.list_chats()} == {
        "One": "f-work", "Two": "f-work", "Three": "f-home"}
    folders.rename_folder(store, "f-home", "   ")  # a blank name changes nothing
    folders.rename_folder(store, "f-home", "House")
    folders.set_folder_collapsed(store, "f-work", True)
    assert [(f.name, f.collapsed) for f in folders.list_folders(store)] == [("Work stuff", True), ("House", False)]

    assert folders.delete_folder(store, "f-home", with_chats=False) == [chats[2].id]
    assert store.chat(chats[2].id).folder_id is None and not store.chat(chats[2].id).deleted  # kept, in no folder
    assert sorted(folders.delete_folder(store, "f-work", with_chats=True)) == sorted([chats[0].id, chats[1].id])
    assert [chat.title for chat in store.list_chats()] == ["Three"]
    assert [folder.name for folder in folders.list_folders(store)] == []
    store.restore_chat(chats[0].id)  # a chat deleted with its folder comes back in no folder
    assert store.chat(chats[0].id).folder_id is None
    store.close()


def test_a_version_7_database_gains_folders_and_keeps_its_chats(tmp_path: Path) -> None:
    path = tmp_path / "history.sqlite3"
    raw = sqlite3.connect(path, isolation_level=None)
    migrate(raw, target=len(MIGRATIONS) - 1)
    raw.execute("INSERT INTO chats (id, title, created, updated) VALUES ('old', 'Kept', 1, 1)")
    raw.close()
    store = HistoryStore.open(path)
    assert [(chat.title, chat.folder_id) for chat in store.list_chats()] == [("Kept", None)]
    folders.create_folder(store, "f", "New")
    folders.move_chat(store, "old", "f")
    assert store.chat("old").folder_id == "f"
    store.close()


# ---------------------------------------------------------------- the sidebar


def _chat(window: MainWindow, question: str, tab: ChatTab | None = None) -> ChatTab:
    tab = tab or window.new_chat()
    tab.input.setPlainText(question)
    tab.send()
    window.bridge.answer(tab.chat_id, f"About {question.lower()}")  # type: ignore[attr-defined]
    return tab


def _rows(sidebar: Sidebar) -> list[str]:
    """What the list shows, a row a line: a folder as "▾ Name  2", a chat in a folder as "  title"."""
    rows = []
    for row in range(sidebar.list.count()):
        item = sidebar.list.item(row)
        inside = item.data(FOLDER_ID) and not item.data(IS_FOLDER)
        rows.append(("  " if inside else "") + item.text().split("\n")[0])
    return rows


def _wait_rows(qtbot, sidebar: Sidebar, expected: list[str]) -> None:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: _rows(sidebar) == expected, timeout=LONG)


def _folder_row(sidebar: Sidebar, name: str):  # type: ignore[no-untyped-def]
    items = [sidebar.list.item(row) for row in range(sidebar.list.count())]
    return next(item for item in items if item.data(IS_FOLDER) and name in item.text())


def _drop(sidebar: Sidebar, chat_id: str, onto) -> None:  # type: ignore[no-untyped-def]
    """A drag's events as Qt delivers them: the dragged row's data entering the list, moving over a row, dropped."""
    data = sidebar.list.mimeData([sidebar.item(chat_id)])
    where = sidebar.list.visualItemRect(onto).center()
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    for event in (QDragEnterEvent(where, Qt.DropAction.MoveAction, data, buttons, keys),
                  QDragMoveEvent(where, Qt.DropAction.MoveAction, data, buttons, keys),
                  QDropEvent(QPointF(where), Qt.DropAction.MoveAction, data, buttons, keys)):
        QApplication.sendEvent(sidebar.list.viewport(), event)
        assert event.isAccepted()


def test_folders_in_the_sidebar(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    sidebar = window.sidebar.sidebar
    rivers = _chat(window, "Rivers", window.current_tab())
    lakes, seas = _chat(window, "Lakes"), _chat(window, "Seas")
    _wait_rows(qtbot, sidebar, ["Seas", "Lakes", "Rivers"])
    sidebar.new_folder("Water", rivers.chat_id)
    _wait_rows(qtbot, sidebar, ["▾ Water  1", "  Rivers", "Recent", "Seas", "Lakes"])
    sidebar.set_pinned(seas.chat_id, True)
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▾ Water  1", "  Rivers", "Recent", "Lakes"])

    _drop(sidebar, lakes.chat_id, _folder_row(sidebar, "Water"))
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▾ Water  2", "  Lakes", "  Rivers"])
    move = next(a.menu() for a in sidebar.context_menu(lakes.chat_id).actions() if a.text() == "Move to folder")
    assert [(a.text(), a.isChecked()) for a in move.actions() if a.text()] == [
        ("Water", True), ("New folder…", False), ("No folder", False)]
    next(a for a in move.actions() if a.text() == "No folder").trigger()
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▾ Water  1", "  Rivers", "Recent", "Lakes"])
    _drop(sidebar, lakes.chat_id, sidebar.item(rivers.chat_id))  # onto a chat in the folder: into the folder
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▾ Water  2", "  Lakes", "  Rivers"])

    row = _folder_row(sidebar, "Water")
    qtbot.mouseClick(sidebar.list.viewport(), Qt.MouseButton.LeftButton, pos=sidebar.list.visualItemRect(row).center())
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▸ Water  2"])
    sidebar.rename_folder(sidebar.folder_ids()[0], "Fresh water")
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▸ Fresh water  2"])
    sidebar.search.setText("lakes")  # a search opens the folders it finds something in, and shows only that
    _wait_rows(qtbot, sidebar, ["▾ Fresh water  1", "  Lakes"])
    sidebar.search.clear()
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▸ Fresh water  2"])
    window.close()

    again = scripted_window()
    wait_restored(qtbot, again)
    sidebar = again.sidebar.sidebar
    # folded, as it was left; the start's empty first tab, replaced by the restored ones, is not listed
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▸ Fresh water  2"])
    folder_id = sidebar.folder_ids()[0]
    sidebar.toggle_folder(folder_id)
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "▾ Fresh water  2", "  Lakes", "  Rivers"])
    sidebar.delete_folder(folder_id, with_chats=False)
    _wait_rows(qtbot, sidebar, ["Pinned", "Seas", "Recent", "Lakes", "Rivers"])


def test_deleting_a_folder_with_its_chats_closes_their_tabs(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    sidebar = window.sidebar.sidebar
    kept = _chat(window, "Kept", window.current_tab())
    doomed = _chat(window, "Doomed")
    folder_id = sidebar.new_folder("Old", doomed.chat_id)
    _wait_rows(qtbot, sidebar, ["▾ Old  1", "  Doomed", "Recent", "Kept"])
    actions = [a.text() for a in folder_menu(sidebar, folder_id).actions() if a.text()]
    assert actions == ["Fold", "Search in this folder", "Rename folder…", "New folder…",
                       "Delete folder, keep its chats", "Delete folder and its chats…"]
    sidebar.delete_folder(folder_id, with_chats=True)
    _wait_rows(qtbot, sidebar, ["Kept"])
    assert [tab.chat_id for tab in window.chat_tabs()] == [kept.chat_id]


def test_a_search_kept_to_one_folder(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    sidebar = window.sidebar.sidebar
    tides = _chat(window, "Tides and moon", window.current_tab())
    moon = _chat(window, "Moon landing")
    folder_id = sidebar.new_folder("Sea", tides.chat_id)
    _wait_rows(qtbot, sidebar, ["▾ Sea  1", "  Tides and moon", "Recent", "Moon landing"])
    sidebar.toggle_folder(folder_id)
    _wait_rows(qtbot, sidebar, ["▸ Sea  1", "Recent", "Moon landing"])
    next(a for a in folder_menu(sidebar, folder_id).actions() if a.text() == "Search in this folder").trigger()
    assert sidebar.within_button.isVisible() and sidebar.within_button.text() == "In “Sea” ✕"
    assert sidebar.search.placeholderText() == "Search in “Sea”…" and sidebar.search.hasFocus()
    _wait_rows(qtbot, sidebar, ["▾ Sea  1", "  Tides and moon"])  # that folder only, unfolded
    sidebar.search.setText("moon")  # in both chats: only the one in the folder is found
    _wait_rows(qtbot, sidebar, ["▾ Sea  1", "  Tides and moon"])
    qtbot.mouseClick(sidebar.within_button, Qt.MouseButton.LeftButton)
    _wait_rows(qtbot, sidebar, ["▾ Sea  1", "  Tides and moon", "Recent", "Moon landing"])
    assert not sidebar.within_button.isVisible() and moon.chat_id in sidebar.chat_ids()

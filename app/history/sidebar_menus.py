"""The sidebar's context menus: one chat's (open, pin, rename, move to a folder, export, delete) and one
folder's (fold, rename, new folder, delete it keeping its chats or with them), and the questions they ask."""

from __future__ import annotations

from functools import partial
from typing import Protocol

from PySide6.QtWidgets import QInputDialog, QMenu, QMessageBox, QWidget

from app.history.records import Chat, Folder


class Sidebar(Protocol):
    """What the menus act on (app/history/sidebar.py's Sidebar)."""

    folders: list[Folder]

    def chat(self, chat_id: str) -> Chat | None: ...
    def folder(self, folder_id: str) -> Folder | None: ...
    def chats_in(self, folder_id: str) -> list[Chat]: ...
    def open(self, chat_id: str) -> None: ...
    def set_pinned(self, chat_id: str, pinned: bool) -> None: ...
    def rename(self, chat_id: str, title: str) -> None: ...
    def export(self, chat_id: str, kind: str) -> None: ...
    def delete(self, chat_id: str) -> None: ...
    def move_chat(self, chat_id: str, folder_id: str | None) -> None: ...
    def new_folder(self, name: str, chat_id: str | None = None) -> str: ...
    def toggle_folder(self, folder_id: str) -> None: ...
    def search_within(self, folder_id: str | None) -> None: ...
    def rename_folder(self, folder_id: str, name: str) -> None: ...
    def delete_folder(self, folder_id: str, with_chats: bool) -> None: ...


def chat_menu(sidebar: Sidebar, chat_id: str) -> QMenu:
    """What a right click (or the Menu key) offers for one chat."""
    menu = QMenu(_widget(sidebar))
    chat = sidebar.chat(chat_id)
    pinned = chat is not None and chat.pinned
    menu.addAction("Open", lambda: sidebar.open(chat_id))
    menu.addAction("Unpin" if pinned else "Pin", lambda: sidebar.set_pinned(chat_id, not pinned))
    menu.addAction("Rename…", lambda: ask_rename_chat(sidebar, chat_id))
    menu.addMenu(move_menu(sidebar, chat_id, menu))
    menu.addAction("Export as Markdown…", lambda: sidebar.export(chat_id, "markdown"))
    menu.addAction("Export as JSON…", lambda: sidebar.export(chat_id, "json"))
    menu.addSeparator()
    menu.addAction("Delete…", lambda: ask_delete_chat(sidebar, chat_id))
    return menu


def move_menu(sidebar: Sidebar, chat_id: str, parent: QMenu) -> QMenu:
    """Move to folder ▸ each folder (the chat's own checked), New folder…, No folder."""
    menu = QMenu("Move to folder", parent)
    chat = sidebar.chat(chat_id)
    current = chat.folder_id if chat is not None else None
    for folder in sidebar.folders:
        action = menu.addAction(folder.name, partial(sidebar.move_chat, chat_id, folder.id))
        action.setCheckable(True)
        action.setChecked(folder.id == current)
    if sidebar.folders:
        menu.addSeparator()
    menu.addAction("New folder…", lambda: ask_new_folder(sidebar, chat_id))
    if current is not None:
        menu.addAction("No folder", lambda: sidebar.move_chat(chat_id, None))
    return menu


def folder_menu(sidebar: Sidebar, folder_id: str) -> QMenu:
    menu = QMenu(_widget(sidebar))
    folder = sidebar.folder(folder_id)
    folded = folder is not None and folder.collapsed
    menu.addAction("Unfold" if folded else "Fold", lambda: sidebar.toggle_folder(folder_id))
    menu.addAction("Search in this folder", lambda: sidebar.search_within(folder_id))
    menu.addAction("Rename folder…", lambda: ask_rename_folder(sidebar, folder_id))
    menu.addAction("New folder…", lambda: ask_new_folder(sidebar))
    menu.addSeparator()
    menu.addAction("Delete folder, keep its chats", lambda: sidebar.delete_folder(folder_id, with_chats=False))
    menu.addAction("Delete folder and its chats…", lambda: ask_delete_folder(sidebar, folder_id))
    return menu


def _widget(sidebar: Sidebar) -> QWidget | None:
    return sidebar if isinstance(sidebar, QWidget) else None


def ask_rename_chat(sidebar: Sidebar, chat_id: str) -> None:
    chat = sidebar.chat(chat_id)
    title, ok = QInputDialog.getText(_widget(sidebar), "Rename chat", "Title:", text=chat.title if chat else "")
    if ok:
        sidebar.rename(chat_id, title)


def ask_delete_chat(sidebar: Sidebar, chat_id: str) -> None:
    chat = sidebar.chat(chat_id)
    question = f"Delete “{chat.title if chat else 'this chat'}” and all its messages?"
    if QMessageBox.question(_widget(sidebar), "Delete chat", question) == QMessageBox.StandardButton.Yes:
        sidebar.delete(chat_id)


def ask_new_folder(sidebar: Sidebar, chat_id: str | None = None) -> None:
    name, ok = QInputDialog.getText(_widget(sidebar), "New folder", "Name:")
    if ok and name.strip():
        sidebar.new_folder(name, chat_id)


def ask_rename_folder(sidebar: Sidebar, folder_id: str) -> None:
    folder = sidebar.folder(folder_id)
    name, ok = QInputDialog.getText(_widget(sidebar), "Rename folder", "Name:", text=folder.name if folder else "")
    if ok:
        sidebar.rename_folder(folder_id, name)


def ask_delete_folder(sidebar: Sidebar, folder_id: str) -> None:
    folder, count = sidebar.folder(folder_id), len(sidebar.chats_in(folder_id))
    question = f"Delete the folder “{folder.name if folder else ''}” and the {count} chat(s) in it?"
    if QMessageBox.question(_widget(sidebar), "Delete folder", question) == QMessageBox.StandardButton.Yes:
        sidebar.delete_folder(folder_id, with_chats=True)

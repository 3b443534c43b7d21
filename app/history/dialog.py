"""Chat > Chats…: every stored chat, searchable across all their text; open, rename, delete.

The list and the search both come from the history thread (callbacks on the
GUI thread), so a large history never freezes the window. Typing searches
after a short pause; an empty search lists the chats, most recent first.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.history.records import Chat, SearchHit
from app.history.sync import HistoryUI

SEARCH_DELAY_MS = 250
CHAT_ID = Qt.ItemDataRole.UserRole


class ChatListDialog(QDialog):
    """Lists chats (or search hits); each item carries its chat id."""

    def __init__(self, history: HistoryUI, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Chats")
        self.resize(560, 480)
        self.history = history
        self.loaded = 0  # how many lists or searches have come back (tests wait on it)
        self.search = QLineEdit(placeholderText="Search all chats…")
        self.search.setClearButtonEnabled(True)
        self.list = QListWidget()
        self.list.itemActivated.connect(lambda _item: self.open_selected())
        self.hint = QLabel()
        self.hint.setProperty("role", "hint")
        self._timer = QTimer(self, singleShot=True, interval=SEARCH_DELAY_MS)
        self._timer.timeout.connect(self.refresh)
        self.search.textChanged.connect(lambda _text: self._timer.start())
        self._build()
        self.refresh()

    def _build(self) -> None:
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        for text, slot in (("Open", self.open_selected), ("Rename…", self.rename_selected), ("Delete…", self.delete_selected)):
            button = QPushButton(text)
            button.clicked.connect(slot)
            buttons.addButton(button, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.hint)
        layout.addWidget(buttons)

    def refresh(self) -> None:
        text = self.search.text().strip()
        client = self.history.client
        if text:
            client.search(text, on_done=self._show_hits, on_error=self._show_error)
        else:
            client.list_chats(on_done=self._show_chats, on_error=self._show_error)

    def _show_chats(self, chats: list[Chat]) -> None:
        self.list.clear()
        for chat in chats:
            self._add(chat.id, chat.title + ("" if not chat.is_open else "  (open)"), chat.title)
        self._loaded(f"{len(chats)} chats" if chats else "No chats yet.")

    def _show_hits(self, hits: list[SearchHit]) -> None:
        self.list.clear()
        seen: set[str] = set()
        for hit in hits:  # the best match of each chat, best chats first
            if hit.chat_id in seen:
                continue
            seen.add(hit.chat_id)
            self._add(hit.chat_id, f"{hit.chat_title} — {hit.role}: {hit.snippet_text}", hit.chat_title)
        self._loaded(f"{len(hits)} matches" if hits else "Nothing found.")

    def _add(self, chat_id: str, text: str, title: str) -> None:
        item = QListWidgetItem(" ".join(text.split()))
        item.setData(CHAT_ID, chat_id)
        item.setToolTip(title)
        self.list.addItem(item)

    def _loaded(self, hint: str) -> None:
        self.hint.setText(hint)
        self.loaded += 1
        if self.list.count() and self.list.currentRow() < 0:
            self.list.setCurrentRow(0)

    def _show_error(self, message: str) -> None:
        self.hint.setText(message)
        self.loaded += 1

    def chat_ids(self) -> list[str]:
        return [self.list.item(row).data(CHAT_ID) for row in range(self.list.count())]

    def selected_chat(self) -> str | None:
        item = self.list.currentItem()
        return item.data(CHAT_ID) if item is not None else None

    def open_selected(self) -> None:
        if (chat_id := self.selected_chat()) is not None:
            self.history.open_chat(chat_id)
            self.accept()

    def rename_selected(self) -> None:
        item = self.list.currentItem()
        if item is None:
            return
        title, ok = QInputDialog.getText(self, "Rename chat", "Title:", text=item.toolTip())
        if ok and title.strip():
            self.history.rename_chat(item.data(CHAT_ID), title.strip())
            self.refresh()

    def delete_selected(self) -> None:
        item = self.list.currentItem()
        if item is None:
            return
        answer = QMessageBox.question(self, "Delete chat", f"Delete “{item.toolTip()}” and all its messages?")
        if answer == QMessageBox.StandardButton.Yes:
            self.history.delete_chat(item.data(CHAT_ID))
            self.refresh()


def show_chat_list(history: HistoryUI, parent: QWidget) -> ChatListDialog:
    dialog = ChatListDialog(history, parent)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.open()
    return dialog


def export_with_dialog(history: HistoryUI, kind: str, parent: QWidget, chat: tuple[str, str] | None = None) -> None:
    """Ask where, then write a chat (chat id, title; default: the current tab's) as "markdown" or "json"."""
    tab = history.host.current_tab()
    if chat is None and tab is None:
        return
    chat_id, title = chat or (tab.chat_id, tab.title)  # type: ignore[union-attr]
    suffix, kinds = (".md", "Markdown (*.md)") if kind == "markdown" else (".json", "JSON (*.json)")
    name = "".join(c if c.isalnum() or c in " -_" else "_" for c in title).strip() or "chat"
    path, _ = QFileDialog.getSaveFileName(parent, "Export chat", name + suffix, kinds)
    if path:
        history.export_chat(chat_id, kind, path)


def import_with_dialog(history: HistoryUI, parent: QWidget) -> None:
    path, _ = QFileDialog.getOpenFileName(parent, "Import chat", "", "JSON (*.json);;All files (*)")
    if path:
        history.import_path(path)

"""The chat sidebar: every stored chat, pinned ones first, then by recency; search over titles and text.

The list comes from the history thread (callbacks on the GUI thread) and is
fetched again, after a short pause, whenever a tab says its chat changed. A
search matches titles here and message text through the history's full-text
index. Clicking a chat opens it in a tab, or switches to its tab; a chat whose
tab is answering carries a dot. Pin, rename, export and delete are in the
context menu (and on the keyboard: Menu key, F2, Delete).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QIcon, QKeyEvent, QPainter, QPixmap
from PySide6.QtWidgets import (
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

from app.chat.tab import ChatTab
from app.history import dialog as history_dialogs
from app.history.records import Chat, SearchHit
from app.history.sync import HistoryUI

REFRESH_DELAY_MS = 150
CHAT_ID = Qt.ItemDataRole.UserRole
HEADER = Qt.ItemDataRole.UserRole + 1
ANSWERING = Qt.ItemDataRole.UserRole + 2
DOT_SIZE = 10


def _dot(color: QColor, size: int = DOT_SIZE) -> QIcon:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QBrush(color))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(1, 1, size - 2, size - 2)
    painter.end()
    return QIcon(pixmap)


class ChatList(QListWidget):
    """The list itself: F2 renames, Delete deletes, the Menu key opens the context menu."""

    rename_pressed = Signal()
    delete_pressed = Signal()

    def event(self, event: QEvent) -> bool:
        # F2 and Delete are the list's while it has focus, not the window's (F2 renames the tab there).
        if event.type() == QEvent.Type.ShortcutOverride and event.key() in (Qt.Key.Key_F2, Qt.Key.Key_Delete):  # type: ignore[attr-defined]
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt override
        if event.key() == Qt.Key.Key_F2:
            self.rename_pressed.emit()
        elif event.key() == Qt.Key.Key_Delete:
            self.delete_pressed.emit()
        else:
            super().keyPressEvent(event)


class Sidebar(QWidget):
    """Chats by recency, searchable; `loaded` counts lists and searches that came back (tests wait on it)."""

    def __init__(self, history: HistoryUI, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebar")
        self.history = history
        self.loaded = 0
        self._chats: list[Chat] = []
        self._hits: dict[str, str] = {}  # chat id -> snippet of its best matching message
        self._search_pending = False
        self.search = QLineEdit(placeholderText="Search chats…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search chats")
        self.list = ChatList(self)
        self.list.setObjectName("chatList")
        self.list.setAccessibleName("Chats")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # long titles are elided
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setIconSize(QSize(DOT_SIZE, DOT_SIZE))
        self.list.setStyleSheet("QListWidget#chatList::item { padding: 3px 2px; }")
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._on_context_menu_requested)
        self.list.itemClicked.connect(self._on_item_chosen)
        self.list.itemActivated.connect(self._on_item_chosen)
        self.list.rename_pressed.connect(lambda: self._with_selected(self.ask_rename))
        self.list.delete_pressed.connect(lambda: self._with_selected(self.ask_delete))
        self._timer = QTimer(self, singleShot=True, interval=REFRESH_DELAY_MS)
        self._timer.timeout.connect(self.refresh)
        self.search.textChanged.connect(lambda _text: self._timer.start())
        self.search.returnPressed.connect(self.list.setFocus)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 0, 6)
        layout.setSpacing(4)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        history.restored.connect(self.refresh)

    # ------------------------------------------------------------ what the window tells it

    def attach(self, tab: ChatTab) -> None:
        """Follow one tab: its messages and title change the list, its answering shows as a dot."""
        tab.conversation_changed.connect(lambda _chat_id: self.refresh_soon())
        tab.title_changed.connect(lambda _title: self.refresh_soon())
        tab.answering_changed.connect(lambda _busy: self._mark_answering())
        self.refresh_soon()

    def refresh_soon(self) -> None:
        self._timer.start()

    def refresh(self) -> None:
        """The list again (or the search again); after the writes queued before it."""
        text = self.search.text().strip()
        client = self.history.client
        client.list_chats(on_done=self._on_chats, on_error=self._on_error)
        if text:
            self._search_pending = True
            client.search(text, on_done=self._on_hits, on_error=self._on_error)

    # ------------------------------------------------------------ results

    def _on_chats(self, chats: list[Chat]) -> None:
        self._chats = chats
        if not self._search_pending:
            self._hits = {}
            self._show()

    def _on_hits(self, hits: list[SearchHit]) -> None:
        self._search_pending = False
        self._hits = {}
        for hit in hits:  # best first: keep each chat's best match
            self._hits.setdefault(hit.chat_id, " ".join(hit.snippet_text.split()))
        self._show()

    def _on_error(self, message: str) -> None:
        self._search_pending = False
        self.history.show_problem(message)
        self.loaded += 1

    def _matching(self) -> list[Chat]:
        words = self.search.text().lower().split()
        if not words:
            return self._chats
        return [chat for chat in self._chats
                if chat.id in self._hits or all(word in chat.title.lower() for word in words)]

    def _show(self) -> None:
        selected = self.selected_chat()
        self.list.clear()
        chats = self._matching()
        pinned = [chat for chat in chats if chat.pinned]
        if pinned:
            self._header("Pinned")
        for index, chat in enumerate(chats):
            if index == len(pinned) and pinned and index < len(chats):
                self._header("Recent")
            self._add(chat)
        if not chats:
            self._header("Nothing found." if self.search.text().strip() else "No chats yet.")
        self._select(selected)
        self._mark_answering()
        self.loaded += 1

    def _header(self, text: str) -> None:
        item = QListWidgetItem(text)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        item.setData(HEADER, True)
        font = item.font()
        font.setPointSizeF(font.pointSizeF() * 0.85)
        font.setBold(True)
        item.setFont(font)
        self.list.addItem(item)

    def _add(self, chat: Chat) -> None:
        snippet = self._hits.get(chat.id, "")
        item = QListWidgetItem(chat.title + (f"\n{snippet}" if snippet else ""))
        item.setData(CHAT_ID, chat.id)
        item.setToolTip(chat.title + (f"\n…{snippet}…" if snippet else ""))
        item.setData(Qt.ItemDataRole.AccessibleTextRole, chat.title + (" (pinned)" if chat.pinned else ""))
        if self.history.tab(chat.id) is not None:
            font = QFont(item.font())
            font.setBold(True)  # open in a tab
            item.setFont(font)
        self.list.addItem(item)

    def _mark_answering(self) -> None:
        dot = _dot(self.palette().color(self.palette().ColorRole.Highlight))
        no_dot = _dot(QColor(Qt.GlobalColor.transparent))  # keeps the titles in one column
        for row in range(self.list.count()):
            item = self.list.item(row)
            if not item.data(CHAT_ID):
                continue
            tab = self.history.tab(item.data(CHAT_ID))
            answering = tab is not None and tab.answering
            item.setIcon(dot if answering else no_dot)
            item.setData(ANSWERING, answering)
            item.setData(Qt.ItemDataRole.AccessibleDescriptionRole, "answering" if answering else "")

    # ------------------------------------------------------------ reading the list

    def chat_ids(self) -> list[str]:
        items = (self.list.item(row) for row in range(self.list.count()))
        return [item.data(CHAT_ID) for item in items if item.data(CHAT_ID)]

    def item(self, chat_id: str) -> QListWidgetItem | None:
        items = (self.list.item(row) for row in range(self.list.count()))
        return next((item for item in items if item.data(CHAT_ID) == chat_id), None)

    def chat(self, chat_id: str) -> Chat | None:
        return next((chat for chat in self._chats if chat.id == chat_id), None)

    def answering_chat_ids(self) -> list[str]:
        items = (self.list.item(row) for row in range(self.list.count()))
        return [item.data(CHAT_ID) for item in items if item.data(CHAT_ID) and item.data(ANSWERING)]

    def selected_chat(self) -> str | None:
        item = self.list.currentItem()
        return item.data(CHAT_ID) if item is not None and item.data(CHAT_ID) else None

    def _select(self, chat_id: str | None) -> None:
        for row in range(self.list.count()):
            if chat_id and self.list.item(row).data(CHAT_ID) == chat_id:
                self.list.setCurrentRow(row)

    # ------------------------------------------------------------ actions

    def open(self, chat_id: str) -> None:
        self.history.open_chat(chat_id)  # switches to its tab, or opens one
        self.refresh_soon()

    def set_pinned(self, chat_id: str, pinned: bool) -> None:
        self.history.client.set_pinned(chat_id, pinned)
        self.refresh()

    def rename(self, chat_id: str, title: str) -> None:
        if title.strip():
            self.history.rename_chat(chat_id, title.strip())
            self.refresh()

    def delete(self, chat_id: str) -> None:
        self.history.delete_chat(chat_id)
        self.refresh()

    def ask_rename(self, chat_id: str) -> None:
        chat = self.chat(chat_id)
        title, ok = QInputDialog.getText(self, "Rename chat", "Title:", text=chat.title if chat else "")
        if ok:
            self.rename(chat_id, title)

    def ask_delete(self, chat_id: str) -> None:
        chat = self.chat(chat_id)
        title = chat.title if chat else "this chat"
        if QMessageBox.question(self, "Delete chat", f"Delete “{title}” and all its messages?") == QMessageBox.StandardButton.Yes:
            self.delete(chat_id)

    def export(self, chat_id: str, kind: str) -> None:
        chat = self.chat(chat_id)
        history_dialogs.export_with_dialog(self.history, kind, self, (chat_id, chat.title if chat else "chat"))

    def context_menu(self, chat_id: str) -> QMenu:
        """What a right click (or the Menu key) offers for one chat."""
        menu = QMenu(self)
        chat = self.chat(chat_id)
        pinned = chat is not None and chat.pinned
        menu.addAction("Open", lambda: self.open(chat_id))
        menu.addAction("Unpin" if pinned else "Pin", lambda: self.set_pinned(chat_id, not pinned))
        menu.addAction("Rename…", lambda: self.ask_rename(chat_id))
        menu.addAction("Export as Markdown…", lambda: self.export(chat_id, "markdown"))
        menu.addAction("Export as JSON…", lambda: self.export(chat_id, "json"))
        menu.addSeparator()
        menu.addAction("Delete…", lambda: self.ask_delete(chat_id))
        return menu

    def _on_context_menu_requested(self, position: QPoint) -> None:
        item = self.list.itemAt(position) or self.list.currentItem()  # the Menu key: the selected chat
        if item is not None and item.data(CHAT_ID):
            menu = self.context_menu(item.data(CHAT_ID))
            menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            menu.popup(self.list.viewport().mapToGlobal(position))

    def _on_item_chosen(self, item: QListWidgetItem) -> None:
        if item.data(CHAT_ID):
            self.open(item.data(CHAT_ID))

    def _with_selected(self, action: object) -> None:
        if (chat_id := self.selected_chat()) is not None:
            action(chat_id)  # type: ignore[operator]

    def focus_search(self) -> None:
        self.show()
        self.search.setFocus()
        self.search.selectAll()

"""The sidebar's list widget: chats, section headers and folders as rows; keys; dragging a chat into a folder.

A row is a chat (CHAT_ID), a folder (FOLDER_ID: "▾ Work  3", a click folds it) or a plain header
("Pinned", "Recent"). Chat rows start after their answering dot, so they read as under their header or folder.
Dragging a chat onto a folder, or onto a chat in it, moves it there; onto anything else (the
"Chats" header, a chat in no folder), out of its folder: `chat_dropped(chat_id, folder_id or "")`.
F2 renames, Delete deletes, the Menu key opens the context menu.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QMimeData, QSize, Qt, Signal
from PySide6.QtGui import (
    QBrush,
    QColor,
    QDragMoveEvent,
    QDropEvent,
    QFont,
    QIcon,
    QKeyEvent,
    QPainter,
    QPalette,
    QPixmap,
)
from PySide6.QtWidgets import QAbstractItemView, QListWidget, QListWidgetItem

from app.history.records import Chat, Folder

CHAT_ID = Qt.ItemDataRole.UserRole
HEADER = Qt.ItemDataRole.UserRole + 1
ANSWERING = Qt.ItemDataRole.UserRole + 2
FOLDER_ID = Qt.ItemDataRole.UserRole + 3  # on a folder's row, and on the rows of the chats in it
IS_FOLDER = Qt.ItemDataRole.UserRole + 4
CHAT_MIME = "application/x-hearth-chat-id"
DOT_SIZE = 10


def dot(color: QColor) -> QIcon:
    """The answering dot, or a transparent one that keeps the titles in line."""
    pixmap = QPixmap(DOT_SIZE, DOT_SIZE)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(QBrush(color))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(1, 1, DOT_SIZE - 2, DOT_SIZE - 2)
    painter.end()
    return QIcon(pixmap)


def header_item(text: str) -> QListWidgetItem:
    item = QListWidgetItem(text)
    item.setFlags(Qt.ItemFlag.ItemIsDropEnabled)  # not chosen, but a chat dropped on it leaves its folder
    item.setData(HEADER, True)
    font = item.font()
    font.setPointSizeF(font.pointSizeF() * 0.85)
    font.setBold(True)
    item.setFont(font)
    return item


def chat_item(chat: Chat, snippet: str, folder_id: str | None, open_in_tab: bool) -> QListWidgetItem:
    """A chat's row: its title, the best matching words of a search under it, bold while a tab shows it."""
    item = QListWidgetItem(chat.title + (f"\n{snippet}" if snippet else ""))
    item.setData(CHAT_ID, chat.id)
    item.setData(FOLDER_ID, folder_id)
    item.setToolTip(chat.title + (f"\n…{snippet}…" if snippet else ""))
    item.setData(Qt.ItemDataRole.AccessibleTextRole, chat.title + (" (pinned)" if chat.pinned else ""))
    if open_in_tab:
        font = QFont(item.font())
        font.setBold(True)
        item.setFont(font)
    return item


def folder_item(folder: Folder, count: int, unfolded: bool) -> QListWidgetItem:
    item = QListWidgetItem(f"{'▾' if unfolded else '▸'} {folder.name}  {count}")
    item.setData(FOLDER_ID, folder.id)
    item.setData(IS_FOLDER, True)
    item.setToolTip(f"{folder.name}: {count} chat{'s' if count != 1 else ''}; click to "
                    f"{'fold' if unfolded else 'unfold'}, drop a chat here to move it in")
    item.setData(Qt.ItemDataRole.AccessibleTextRole, f"Folder {folder.name}, {count} chats")
    item.setData(Qt.ItemDataRole.AccessibleDescriptionRole, "expanded" if unfolded else "collapsed")
    font = QFont(item.font())
    font.setBold(True)
    item.setFont(font)
    return item


class ChatList(QListWidget):
    rename_pressed = Signal()
    delete_pressed = Signal()
    chat_dropped = Signal(str, str)  # chat id, the folder id it was dropped into ("": none)

    def __init__(self, parent: object = None) -> None:
        super().__init__(parent)  # type: ignore[arg-type]
        self.setObjectName("chatList")
        self.setAccessibleName("Chats")
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # long titles are elided
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setIconSize(QSize(DOT_SIZE, DOT_SIZE))
        self.setStyleSheet("QListWidget#chatList::item { padding: 3px 2px; }")
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)  # the sidebar's menus
        self.setDragEnabled(True)
        self.setAcceptDrops(True)
        self.setDropIndicatorShown(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)
        self.setDefaultDropAction(Qt.DropAction.MoveAction)

    def event(self, event: QEvent) -> bool:
        # F2 and Delete are the list's while it has focus, not the window's (F2 renames the tab there).
        if event.type() == QEvent.Type.ShortcutOverride and event.key() in (Qt.Key.Key_F2, Qt.Key.Key_Delete):  # type: ignore[attr-defined]
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_F2:
            self.rename_pressed.emit()
        elif event.key() == Qt.Key.Key_Delete:
            self.delete_pressed.emit()
        else:
            super().keyPressEvent(event)

    def rows(self) -> list[QListWidgetItem]:
        return [self.item(row) for row in range(self.count())]

    def mark_answering(self, answering: Callable[[str], bool]) -> None:
        """A dot before each chat whose tab is answering (a clear one before the others keeps titles in line)."""
        icons = {False: dot(QColor(Qt.GlobalColor.transparent)), True: dot(self.palette().color(QPalette.ColorRole.Highlight))}
        for item in self.rows():
            if item.data(CHAT_ID):
                busy = answering(item.data(CHAT_ID))
                item.setIcon(icons[busy])
                item.setData(ANSWERING, busy)
                item.setData(Qt.ItemDataRole.AccessibleDescriptionRole, "answering" if busy else "")

    # ------------------------------------------------------------ dragging a chat

    def mimeData(self, items: Sequence[QListWidgetItem]) -> QMimeData:
        data = super().mimeData(items)
        chats = [item.data(CHAT_ID) for item in items if item.data(CHAT_ID)]
        if chats:
            data.setData(CHAT_MIME, chats[0].encode())
        return data

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if event.mimeData().hasFormat(CHAT_MIME):
            event.setDropAction(Qt.DropAction.MoveAction)
            event.accept()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        """Never the list's own reordering: the chat changes folder, and the list is drawn again."""
        if not event.mimeData().hasFormat(CHAT_MIME):
            event.ignore()
            return
        chat_id = bytes(event.mimeData().data(CHAT_MIME).data()).decode()
        target = self.itemAt(event.position().toPoint())
        folder = target.data(FOLDER_ID) if target is not None else None
        event.setDropAction(Qt.DropAction.CopyAction)  # nothing for the view to remove
        event.accept()
        self.chat_dropped.emit(chat_id, folder or "")

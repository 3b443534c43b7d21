"""The chat sidebar: every stored chat, pinned ones first, then folders, then by recency; search over titles and text.

The list comes from the history thread (callbacks on the GUI thread) and is
fetched again, after a short pause, whenever a tab says its chat changed. A
search matches titles here and message text through the history's full-text
index. Clicking a chat opens it in a tab, or switches to its tab; a chat whose
tab is answering carries a dot. Pin, rename, move to a folder, export and delete
are in the context menu (app/history/sidebar_menus.py; on the keyboard: Menu key,
F2, Delete). Folders (app/history/folders.py) hold chats dragged onto them; a click
folds one; a search shows the folders with matches, unfolded. Which rows are listed, in
which order, is app/history/sidebar_rows.py's; the list widget and its rows' looks are
app/history/chat_list.py's.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtWidgets import QLineEdit, QListWidgetItem, QMenu, QPushButton, QVBoxLayout, QWidget

from app.chat.tab import ChatTab
from app.history import dialog as history_dialogs
from app.history.chat_list import (
    ANSWERING,
    CHAT_ID,
    FOLDER_ID,
    IS_FOLDER,
    ChatList,
    chat_item,
    folder_item,
    header_item,
)
from app.history.records import Chat, Folder, SearchHit
from app.history.sidebar_menus import ask_delete_chat, ask_rename_chat, chat_menu, folder_menu
from app.history.sidebar_rows import ChatRow, FolderRow, Row, arrange, matching
from app.history.sync import HistoryUI

REFRESH_DELAY_MS = 150


class Sidebar(QWidget):
    """Chats by recency, searchable; `loaded` counts lists and searches that came back (tests wait on it)."""

    def __init__(self, history: HistoryUI, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("sidebar")
        self.history = history
        self.loaded = 0
        self._chats: list[Chat] = []
        self.folders: list[Folder] = []
        self.within: str | None = None  # the folder a search is kept to
        self._hits: dict[str, str] = {}  # chat id -> snippet of its best matching message
        self._search_pending = False
        self.search = QLineEdit(placeholderText="Search chats…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search chats")
        self.list = ChatList(self)
        self.list.customContextMenuRequested.connect(self._on_context_menu_requested)
        self.list.itemClicked.connect(self._on_item_chosen)
        self.list.itemActivated.connect(self._on_item_chosen)
        self.list.rename_pressed.connect(lambda: self._with_selected(self.ask_rename))
        self.list.delete_pressed.connect(lambda: self._with_selected(self.ask_delete))
        self.list.chat_dropped.connect(lambda chat_id, folder_id: self.move_chat(chat_id, folder_id or None))
        self._timer = QTimer(self, singleShot=True, interval=REFRESH_DELAY_MS)
        self._timer.timeout.connect(self.refresh)
        self.search.textChanged.connect(lambda _text: self._timer.start())
        self.search.returnPressed.connect(self.list.setFocus)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 0, 6)
        layout.setSpacing(4)
        self.within_button = QPushButton()  # "In “Work” ✕": the search is kept to that folder until clicked
        self.within_button.setFlat(True)
        self.within_button.setToolTip("Search every chat again")
        self.within_button.clicked.connect(lambda: self.search_within(None))
        self.within_button.hide()
        layout.addWidget(self.search)
        layout.addWidget(self.within_button)
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
        client.list_folders(on_done=self._on_folders, on_error=self._on_error)  # answered before the chats
        client.list_chats(on_done=self._on_chats, on_error=self._on_error)
        if text:
            self._search_pending = True
            client.search(text, on_done=self._on_hits, on_error=self._on_error)

    # ------------------------------------------------------------ results

    def _on_folders(self, folders: list[Folder]) -> None:
        self.folders = folders

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

    def _show(self) -> None:
        selected = self.selected_chat()
        self.list.clear()
        chats = matching(self._chats, self._hits, self.search.text(), self.within)
        for row in arrange(chats, self.folders, bool(self.search.text().strip()), self.within):
            self.list.addItem(self._item(row))
        self._select(selected)
        self._mark_answering()
        self.loaded += 1

    def _item(self, row: Row) -> QListWidgetItem:
        if isinstance(row, ChatRow):
            chat = row.chat
            return chat_item(chat, self._hits.get(chat.id, ""), row.folder_id, self.history.tab(chat.id) is not None)
        if isinstance(row, FolderRow):
            return folder_item(row.folder, row.count, row.unfolded)
        return header_item(row.title)

    def _mark_answering(self) -> None:
        self.list.mark_answering(lambda chat_id: (tab := self.history.tab(chat_id)) is not None and tab.answering)

    # ------------------------------------------------------------ reading the list

    def chat_ids(self) -> list[str]:
        return [item.data(CHAT_ID) for item in self.list.rows() if item.data(CHAT_ID)]

    def item(self, chat_id: str) -> QListWidgetItem | None:
        return next((item for item in self.list.rows() if item.data(CHAT_ID) == chat_id), None)

    def answering_chat_ids(self) -> list[str]:
        return [item.data(CHAT_ID) for item in self.list.rows() if item.data(CHAT_ID) and item.data(ANSWERING)]

    def chat(self, chat_id: str) -> Chat | None:
        return next((chat for chat in self._chats if chat.id == chat_id), None)

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
        ask_rename_chat(self, chat_id)  # the question is the menus' (sidebar_menus.py)

    def ask_delete(self, chat_id: str) -> None:
        ask_delete_chat(self, chat_id)

    def export(self, chat_id: str, kind: str) -> None:
        chat = self.chat(chat_id)
        history_dialogs.export_with_dialog(self.history, kind, self, (chat_id, chat.title if chat else "chat"))

    def context_menu(self, chat_id: str) -> QMenu:
        """What a right click (or the Menu key) offers for one chat."""
        return chat_menu(self, chat_id)

    def _on_context_menu_requested(self, position: QPoint) -> None:
        item = self.list.itemAt(position) or self.list.currentItem()  # the Menu key: the selected row
        if item is None or not (item.data(CHAT_ID) or item.data(IS_FOLDER)):
            return
        menu = self.context_menu(item.data(CHAT_ID)) if item.data(CHAT_ID) else folder_menu(self, item.data(FOLDER_ID))
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.popup(self.list.viewport().mapToGlobal(position))

    def _on_item_chosen(self, item: QListWidgetItem) -> None:
        if item.data(CHAT_ID):
            self.open(item.data(CHAT_ID))
        elif item.data(IS_FOLDER):
            self.toggle_folder(item.data(FOLDER_ID))

    # ------------------------------------------------------------ folders

    def folder(self, folder_id: str) -> Folder | None:
        return next((folder for folder in self.folders if folder.id == folder_id), None)

    def folder_ids(self) -> list[str]:
        """The folders as listed, in order."""
        return [item.data(FOLDER_ID) for item in self.list.rows() if item.data(IS_FOLDER)]

    def new_folder(self, name: str, chat_id: str | None = None) -> str:
        """A folder (listed last), with `chat_id` moved into it; its id."""
        folder_id = self.history.client.create_folder(name)
        if chat_id is not None:
            self.history.client.move_chat(chat_id, folder_id)
        self.refresh()
        return folder_id

    def move_chat(self, chat_id: str, folder_id: str | None) -> None:
        self.history.client.move_chat(chat_id, folder_id)
        self.refresh()

    def search_within(self, folder_id: str | None) -> None:
        """Keep the search (and the list) to one folder, or (None) to every chat again."""
        folder = self.folder(folder_id) if folder_id is not None else None
        self.within = folder.id if folder is not None else None
        self.within_button.setText(f"In “{folder.name}” ✕" if folder is not None else "")
        self.within_button.setAccessibleName(f"Searching in folder {folder.name}; press to search every chat"
                                             if folder is not None else "")
        self.within_button.setVisible(folder is not None)
        self.search.setPlaceholderText(f"Search in “{folder.name}”…" if folder is not None else "Search chats…")
        self._show()
        if folder is not None:
            self.search.setFocus()

    def toggle_folder(self, folder_id: str) -> None:
        folder = self.folder(folder_id)
        if folder is not None:
            self.history.client.set_folder_collapsed(folder_id, not folder.collapsed)
            self.refresh()

    def rename_folder(self, folder_id: str, name: str) -> None:
        if name.strip():
            self.history.client.rename_folder(folder_id, name)
            self.refresh()

    def chats_in(self, folder_id: str) -> list[Chat]:
        return [chat for chat in self._chats if chat.folder_id == folder_id]

    def delete_folder(self, folder_id: str, with_chats: bool) -> None:
        """Its chats go back to no folder, or are deleted with it (their tabs closed)."""
        for chat in self.chats_in(folder_id) if with_chats else []:
            self.history.delete_chat(chat.id)
        self.history.client.delete_folder(folder_id, with_chats)
        self.refresh()

    def _with_selected(self, action: Callable[[str], None]) -> None:
        if (chat_id := self.selected_chat()) is not None:
            action(chat_id)

    def focus_search(self) -> None:
        self.show()
        self.search.setFocus()
        self.search.selectAll()

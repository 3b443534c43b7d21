"""Branches, edits, deletes and scroll positions of the tabs, kept in the chat history.

HistoryUI (app/history/sync.py) makes one BranchKeeper, hands itself over as
the `SyncedTabs` below, and tells it about each tab. It keeps the latest ChatSnapshot of every open chat so "< 1/2 >" can be
drawn and switched without a trip to the disk; after anything that changes a
chat's tree (an edit, a regenerated answer, a delete) the chat is read again.
Switching is: select the alternative in the store, read the chat, show its
active path in the tab. Requests run in order on the history thread, so a read
queued after a write always sees it.

Scroll positions are stored as `MessageList.scroll_from_bottom()` (0.0: at the
bottom, which is also what a chat that never stored one gets) when a tab closes
and when the window closes.
"""

from __future__ import annotations

from itertools import islice
from typing import Protocol

from app.chat.tab import ChatTab
from app.history.client import HistoryClient
from app.history.records import ChatSnapshot


class SyncedTabs(Protocol):
    """What BranchKeeper needs from the part that keeps tabs and store in step (HistoryUI)."""

    @property
    def client(self) -> HistoryClient: ...

    def tab(self, chat_id: str) -> ChatTab | None: ...

    def ids(self, chat_id: str) -> list[str]:
        """The stored ids of the messages the chat's tab shows, changed in place."""

    def render(self, tab: ChatTab, snapshot: ChatSnapshot) -> None: ...

    def show_problem(self, message: str) -> None: ...


class BranchKeeper:
    """The "< 1/2 >" state of each open chat and the store calls behind edit, delete and switch."""

    def __init__(self, ui: SyncedTabs) -> None:
        self.ui = ui
        self.snapshots: dict[str, ChatSnapshot] = {}  # chat id -> the latest read of that chat
        self._tabs: dict[str, ChatTab] = {}  # still reachable while a closing tab is being saved
        self.switches = 0  # branch switches shown, for tests

    @property
    def client(self) -> HistoryClient:
        return self.ui.client

    def attach(self, tab: ChatTab) -> None:
        self._tabs[tab.chat_id] = tab
        tab.message_edited.connect(self._on_message_edited)
        tab.messages_deleted.connect(self._on_messages_deleted)
        tab.branch_step_requested.connect(self._on_branch_step_requested)
        tab.view.earlier_shown.connect(lambda count, chat_id=tab.chat_id: self._on_earlier_shown(chat_id, count))

    def _on_earlier_shown(self, chat_id: str, count: int) -> None:
        if (snapshot := self.snapshots.get(chat_id)) is not None:
            self.show_positions(snapshot, count)  # the new cards' "< 1/2 >"; the others have theirs

    # ------------------------------------------------------------ "< 1/2 >"

    def refresh(self, chat_id: str) -> None:
        """Read the chat again (after its writes) and redraw the alternatives' positions."""
        self.client.load_chat(chat_id, on_done=self.show_positions, on_error=lambda _message: None)

    def show_positions(self, snapshot: ChatSnapshot, first: int | None = None) -> None:
        """Draw every card's "< 1/2 >", or only the `first` cards' (those just made from earlier messages)."""
        self.snapshots[snapshot.chat.id] = snapshot
        tab, ids = self.ui.tab(snapshot.chat.id), self.ui.ids(snapshot.chat.id)
        if tab is None:
            return
        for card, message_id in islice(zip(tab.view.message_cards(), ids[tab.view.hidden_count():]), first):
            if snapshot.siblings(message_id):  # a message sent after this read is drawn at the next one
                card.branch_bar.set_position(*snapshot.position(message_id))

    def _on_branch_step_requested(self, chat_id: str, index: int, step: int) -> None:
        snapshot, ids = self.snapshots.get(chat_id), self.ui.ids(chat_id)
        if snapshot is None or index >= len(ids):
            return
        alternatives = [m.id for m in snapshot.siblings(ids[index])]
        if ids[index] not in alternatives:
            return
        wanted = alternatives.index(ids[index]) + step
        if 0 <= wanted < len(alternatives):
            self.client.select_message(alternatives[wanted])
            self.client.load_chat(chat_id, on_done=self._show_switched, on_error=self.ui.show_problem)

    def _show_switched(self, snapshot: ChatSnapshot) -> None:
        tab = self.ui.tab(snapshot.chat.id)
        if tab is None or tab.answering:  # a turn started meanwhile: it owns the tab now
            return
        self.ui.render(tab, snapshot)
        self.show_positions(snapshot)
        self.switches += 1

    # ------------------------------------------------------------ edit and delete

    def _on_message_edited(self, chat_id: str, index: int, text: str) -> None:
        """The tab replaced messages[index:] with one new user message: store it as an alternative."""
        ids, tab = self.ui.ids(chat_id), self.ui.tab(chat_id)
        images = tab.messages[index].images if tab is not None and index < len(tab.messages) else ()
        if index < len(ids):
            new_id = self.client.edit_message(ids[index], text, images)
        else:  # the old message never reached the store (no history): a plain new message
            new_id = self.client.add_message(chat_id, "user", text, parent_id=ids[-1] if ids else None, images=images)
        ids[index:] = [new_id]

    def _on_messages_deleted(self, chat_id: str, index: int) -> None:
        """Delete the message and all below it; show what the store then shows (another alternative, if any)."""
        ids = self.ui.ids(chat_id)
        if index >= len(ids):
            return
        self.client.delete_message(ids[index])
        del ids[index:]
        self.client.load_chat(chat_id, on_done=self._show_switched, on_error=lambda _message: None)

    # ------------------------------------------------------------ scroll positions

    def restore_scroll(self, tab: ChatTab, snapshot: ChatSnapshot) -> None:
        tab.view.restore_scroll(snapshot.chat.scroll_position)

    def save_scroll(self, chat_id: str) -> None:
        tab = self._tabs.pop(chat_id, None)
        if tab is not None:
            self.client.set_scroll_position(chat_id, tab.view.scroll_from_bottom())

    def save_all_scrolls(self) -> None:
        for chat_id in list(self._tabs):
            self.save_scroll(chat_id)

"""What one message's buttons do: Edit (then send as a new branch), Delete, "< 1/2 >".

A tab owns one MessageActions and hands it what it works on: the conversation
(read through the small `Conversation` interface), the message list, the input
and the two buttons that change while editing. The actions turn a card's button
into an index into the tab's messages and say what happened by signals; the tab
keeps its own buttons and tells the history.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QPlainTextEdit, QPushButton

from app.bridge import ChatMessage
from app.chat.message_list import MessageCard, MessageList

EDIT_TIP = "Send the edited message as a new branch; the old one stays under < 1/2 >"


class Conversation(Protocol):
    """The part of a tab the actions read: its messages (changed in place) and whether it is answering."""

    @property
    def messages(self) -> list[ChatMessage]: ...

    @property
    def answering(self) -> bool: ...


class MessageActions(QObject):
    """Edit, delete and branch steps on one tab's message cards."""

    deleted = Signal(int)  # messages[index:] were removed
    branch_step_requested = Signal(int, int)  # index in messages, -1/+1: the previous/next alternative
    edit_started = Signal(object)  # the edited message's pictures: back on the chips, as its text in the input
    edit_cancelled = Signal()

    def __init__(self, conversation: Conversation, view: MessageList, input: QPlainTextEdit,
                 send_button: QPushButton, cancel_edit_button: QPushButton, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._conversation, self._view, self._input = conversation, view, input
        self._send_button, self._cancel_edit_button = send_button, cancel_edit_button
        self.editing_index: int | None = None  # the message Send will replace, while editing
        view.edit_requested.connect(self._on_edit_requested)
        view.delete_requested.connect(self._on_delete_requested)
        view.branch_step_requested.connect(self._on_branch_step_requested)
        cancel_edit_button.clicked.connect(self.cancel_edit)
        cancel_edit_button.hide()

    def begin_edit(self, index: int) -> None:
        """Put a user message in the input; the next Send replaces it (and the answers below) as a new branch."""
        messages = self._conversation.messages
        if self._conversation.answering or not 0 <= index < len(messages) or messages[index].role != "user":
            return
        self.editing_index = index
        self._input.setPlainText(messages[index].content)
        self._input.setFocus()
        self._show_editing(True)
        self.edit_started.emit(messages[index].images)

    def cancel_edit(self) -> None:
        self.editing_index = None
        self._input.clear()
        self._show_editing(False)
        self.edit_cancelled.emit()

    def take_edit(self) -> int | None:
        """The index Send replaces (None: not editing); the edit is over either way."""
        index, self.editing_index = self.editing_index, None
        self._show_editing(False)
        return index

    def delete_message(self, index: int) -> None:
        """Remove a message and everything below it in this branch."""
        if self._conversation.answering or not 0 <= index < len(self._conversation.messages):
            return
        if self.editing_index is not None and self.editing_index >= index:
            self.cancel_edit()
        self.truncate(index)
        self.deleted.emit(index)

    def truncate(self, index: int) -> None:
        """Drop messages[index:] and their cards (error notes below them too)."""
        del self._conversation.messages[index:]
        if index < self._view.hidden_count():
            self._view.show_all()  # the message is not a card yet: it must become one to go
        cards, hidden = self._view.message_cards(), self._view.hidden_count()
        if index - hidden < len(cards):
            self._view.remove_from(cards[index - hidden])

    def _message_index(self, card: MessageCard) -> int:
        cards = self._view.message_cards()
        return cards.index(card) + self._view.hidden_count() if card in cards else -1

    def _on_edit_requested(self, card: MessageCard) -> None:
        self.begin_edit(self._message_index(card))

    def _on_delete_requested(self, card: MessageCard) -> None:
        self.delete_message(self._message_index(card))

    def _on_branch_step_requested(self, card: MessageCard, step: int) -> None:
        index = self._message_index(card)
        if not self._conversation.answering and 0 <= index < len(self._conversation.messages):
            self.branch_step_requested.emit(index, step)

    def _show_editing(self, editing: bool) -> None:
        self._cancel_edit_button.setVisible(editing)
        self._send_button.setText("Send edit" if editing else "Send")
        self._send_button.setToolTip(EDIT_TIP if editing else "")

"""What a tab does with one message's buttons: Edit (then send as a new branch), Delete, "< 1/2 >".

A mixin of ChatTab (app/chat/tab.py), kept apart so the tab stays about sending
and streaming. The tab owns the signals and the state it uses here
(`messages`, `view`, `input`, `editing_index`, `answering`, the buttons).
"""

from __future__ import annotations

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QPlainTextEdit, QPushButton

from app.bridge import ChatMessage
from app.chat.message_list import MessageCard, MessageList


class MessageActions:
    """Edit, delete and branch steps on the tab's message cards."""

    # What ChatTab provides (declared for the type checker).
    chat_id: str
    messages: list[ChatMessage]
    answering: bool
    editing_index: int | None
    view: MessageList
    input: QPlainTextEdit
    send_button: QPushButton
    cancel_edit_button: QPushButton
    messages_deleted: SignalInstance
    branch_step_requested: SignalInstance

    def _update_buttons(self) -> None:
        raise NotImplementedError

    def begin_edit(self, index: int) -> None:
        """Put a user message in the input; the next Send replaces it (and the answers below) as a new branch."""
        if self.answering or not 0 <= index < len(self.messages) or self.messages[index].role != "user":
            return
        self.editing_index = index
        self.input.setPlainText(self.messages[index].content)
        self.input.setFocus()
        self._show_editing(True)

    def cancel_edit(self) -> None:
        self.editing_index = None
        self.input.clear()
        self._show_editing(False)

    def delete_message(self, index: int) -> None:
        """Remove a message and everything below it in this branch."""
        if self.answering or not 0 <= index < len(self.messages):
            return
        if self.editing_index is not None and self.editing_index >= index:
            self.cancel_edit()
        self._truncate(index)
        self._update_buttons()
        self.messages_deleted.emit(self.chat_id, index)

    def _message_index(self, card: MessageCard) -> int:
        cards = self.view.message_cards()
        return cards.index(card) if card in cards else -1

    def _on_edit_requested(self, card: MessageCard) -> None:
        self.begin_edit(self._message_index(card))

    def _on_delete_requested(self, card: MessageCard) -> None:
        self.delete_message(self._message_index(card))

    def _on_branch_step_requested(self, card: MessageCard, step: int) -> None:
        index = self._message_index(card)
        if not self.answering and 0 <= index < len(self.messages):
            self.branch_step_requested.emit(self.chat_id, index, step)

    def _truncate(self, index: int) -> None:
        """Drop messages[index:] and their cards (error notes below them too)."""
        del self.messages[index:]
        cards = self.view.message_cards()
        if index < len(cards):
            self.view.remove_from(cards[index])

    def _show_editing(self, editing: bool) -> None:
        self.cancel_edit_button.setVisible(editing)
        self.send_button.setText("Send edit" if editing else "Send")
        self.send_button.setToolTip("Send the edited message as a new branch; the old one stays under < 1/2 >"
                                    if editing else "")


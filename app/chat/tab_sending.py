"""What Send does with the input's text: send it now, queue it, or refuse it with the reason.

A message waits in the queue above the input (app/chat/message_queue.py) while the chat answers or
its model loads, and goes once the chat is free; a dictated one keeps what was heard while it
waits. A message whose pictures the model cannot see is refused: the text and the chips stay, and
the reason shows. The tab (app/chat/tab.py) owns one Sending and is handed each message that goes
(`ask`): it puts it in the conversation and starts the turn.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QLabel, QPlainTextEdit

from app.chat.attachments import AttachmentsBar
from app.chat.message_actions import MessageActions
from app.chat.message_queue import MessageQueue
from app.chat.tab_model import ChatModel
from app.misc.accessibility import announce
from app.voice.dictation import DictationControl
from engine.protocol import Dictation

REFUSED_ENDING = "nothing was sent."  # how a refusal's reason ends (app/chat/attachments.py)

# The message's text, what was heard of it (None: typed), the index of the message it replaces (None: a new one).
Ask = Callable[[str, Dictation | None, int | None], None]


class Sending:
    """Send, the queue it fills, and the dictations that wait in it."""

    def __init__(self, input: QPlainTextEdit, queue: MessageQueue, dictation: DictationControl,
                 attachments: AttachmentsBar, actions: MessageActions, reason: QLabel, model: ChatModel,
                 answering: Callable[[], bool], ask: Ask) -> None:
        self._input, self._queue, self._dictation = input, queue, dictation
        self._attachments, self._actions, self._reason = attachments, actions, reason
        self._model, self._answering, self._ask = model, answering, ask
        self._queued_dictations: dict[str, Dictation] = {}  # a dictated message queued while the chat answers

    def send(self) -> None:
        """Send what the input holds; while an answer streams it is queued and sent when the answer ends."""
        text = self._input.toPlainText().strip()
        if not text or not self._model.takes_messages:
            return
        editing = self._actions.editing_index is not None  # an edit replaces messages: never queued
        if (self._answering() or self._queue.items() or not self._model.ready) and not editing:
            if (dictation := self._dictation.take()) is not None:
                self._queued_dictations[text] = dictation
            self._input.clear()
            self._queue.add(text)
            announce(self._queue, f"Queued: {self._queue.note}")
        elif not self._answering() and self._model.ready:
            self.send_text(text, typed=True)

    def send_text(self, text: str, typed: bool) -> bool:
        """Hand the message on (`typed`: the input's, which may be an edit); False if refused."""
        refusal = self._attachments.refusal()
        if refusal:  # never sent without its pictures: the text and the chips stay
            self._reason.setText(refusal)
            self._reason.show()
            return False
        edited = self._actions.take_edit() if typed else None
        dictation = self._dictation.take() if typed else self._queued_dictations.pop(text, None)
        if typed:
            self._input.clear()
        self._ask(text, dictation, edited)
        return True

    def on_answering_changed(self, answering: bool) -> None:
        if not answering:
            self._queue.send_soon()  # the queued message goes once the answer has ended

    def on_refusal_resolved(self) -> None:
        if not self._attachments.refusal() and self._reason.text().endswith(REFUSED_ENDING):
            self._reason.clear()
            self._reason.hide()
            self._queue.send_soon()  # a queued message was waiting for its pictures to be sendable

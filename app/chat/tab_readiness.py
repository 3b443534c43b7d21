"""A chat tab's model as the tab shows it: which model the chat talks to, whether it is ready, and
what the input, Think, the queue and the pictures do when that changes.

ChatModel (app/chat/tab_model.py) keeps the chat's choice of model and its state; this base of
ChatTab (app/chat/tab.py) is the tab's side of it, the calls the window and the history make. It is
separate from the tab's controls and actions because it changes when loading and readiness change
(text taken and queued while the model loads, a picture's chip saying whether the model sees it),
not when a button moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.bridge import ModelInfo
from app.chat.answering_tab import AnsweringTab
from app.chat.message_queue import WAITING_FOR_ANSWER, WAITING_FOR_MODEL, MessageQueue
from app.chat.tab_layout import ChatInput
from app.chat.tab_model import ChatModel


class ReadinessTab(AnsweringTab):
    """The chat's model side of a tab; the subclass makes the widgets named below (and AnsweringTab's)."""

    chat_model: ChatModel
    input: ChatInput
    message_queue: MessageQueue

    @property
    def model_path(self) -> str:
        """The model this chat talks to ("": the window's, the model loaded last)."""
        return self.chat_model.path

    def set_model_path(self, path: str) -> None:
        """The chat's model, as chosen elsewhere (emits nothing)."""
        self.chat_model.set_path(path)

    def choose_model(self, path: str) -> None:
        """As if the user picked `path` in the header (the history restoring the chat's model)."""
        self.chat_model.choose(path)

    def model_info(self) -> ModelInfo | None:
        """What the engine loaded for this chat (its own model, not the one loaded last); None while it loads."""
        return self.chat_model.info()

    @property
    def model_ready(self) -> bool:
        return self.chat_model.ready

    def set_model_ready(self, ready: bool, reason: str = "", waiting: bool = False) -> None:
        """Sending needs a model; without one, say why, visibly. While it loads (`waiting`) the input still takes
        text, and Send queues the message until the model is ready. The Think setting follows the model."""
        self.chat_model.set_ready(ready, waiting)
        info = self.model_info()
        self.think_control.set_capabilities(info.capabilities if ready and info is not None else ())
        self.input.setEnabled(self.chat_model.takes_messages)
        self.message_queue.set_note(WAITING_FOR_MODEL if self.chat_model.waiting else WAITING_FOR_ANSWER)
        self.reason.setText(reason)
        self.reason.setVisible(bool(reason))
        self.attachments.show_picture_states()  # a picture's chip says whether this model can see it
        self._update_buttons()
        if ready:
            self.message_queue.send_soon()

    def set_think_settings(self, settings: Mapping[str, Any]) -> None:
        """The chat's stored Think choice and budget (the history restoring it)."""
        self.think_control.restore(settings)

"""The window's side of Model > Check quantization…: its models to choose from, and its chats making room.

The dialog is made once per window and kept, so its results are there when it
is opened again (closing it cancels a running check). When the check does not fit
beside the chats' model, `ChatsMakingRoom` stops the engine thread (the only
way to give its model's memory back), tells every tab why it cannot send, and
loads the same model again when the check ends.
"""

from __future__ import annotations

from typing import Callable, Sequence

from PySide6.QtCore import SignalInstance
from PySide6.QtWidgets import QWidget

from app.bridge import EngineBridge, ModelConfig
from app.chat.tab import ChatTab
from app.quantcheck.dialog import QuantCheckDialog
from app.window.model_lifecycle import ModelLifecycle


class ChatsMakingRoom:
    """The dialog's ChatsModel, over the window's bridge, model life cycle and tabs."""

    def __init__(
        self, bridge: EngineBridge, lifecycle: ModelLifecycle, tabs: Callable[[], Sequence[ChatTab]],
        chat_opened: SignalInstance,
    ) -> None:
        self._bridge, self._lifecycle, self._tabs, self._chat_opened = bridge, lifecycle, tabs, chat_opened
        self._paused: ModelConfig | None = None
        self._reason = ""

    @property
    def paused(self) -> bool:
        return self._paused is not None

    def loaded_model(self) -> tuple[str, int] | None:
        info = self._bridge.model_info
        if info is None or self.paused:
            return None
        return info.name, info.model_bytes + info.kv_cache_bytes

    def answering(self) -> bool:
        return any(tab.answering for tab in self._tabs())

    def pause(self, reason: str) -> None:
        config = self._lifecycle.config_in_effect
        if config is None or self.paused:
            return
        self._paused, self._reason = config, reason
        self._bridge.shutdown()  # joins the engine thread, which frees the model and its caches
        self._lifecycle.set_unavailable(reason)
        self._lifecycle.lost.emit()  # the gauge shows no model meanwhile
        self._chat_opened.connect(self._on_chat_opened)

    def resume(self) -> None:
        config, self._paused = self._paused, None
        if config is None:
            return
        self._chat_opened.disconnect(self._on_chat_opened)
        self._lifecycle.load(config)  # a fresh engine thread; the tabs can send once it has loaded

    def _on_chat_opened(self, tab: ChatTab) -> None:
        tab.set_model_ready(False, self._reason)  # a tab opened meanwhile cannot send either


def open_check(
    parent: QWidget, dialog: QuantCheckDialog | None, chats: ChatsMakingRoom, recent: Sequence[str]
) -> QuantCheckDialog:
    """Show the window's dialog, making it the first time (it then looks for the models itself)."""
    if dialog is None:
        dialog = QuantCheckDialog(None, chats, parent, recent=recent)
    if dialog.isVisible():
        dialog.raise_()  # already open, perhaps behind the window
        dialog.activateWindow()
    dialog.show()
    return dialog

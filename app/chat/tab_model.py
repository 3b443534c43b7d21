"""The model one chat tab talks to: the path picked in its header, what the engine loaded for it,
and whether it can answer now.

The tab (app/chat/tab.py) owns one ChatModel and shows its state (the input, the Think setting,
the reason line); the window says when a model is ready or loading (app/window/tab_models.py).
This changes when the engine's model handling changes, not when a widget of the tab does.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from app.bridge import EngineBridge, ModelInfo
from app.chat.document_vectors import Vectors, document_vectors
from app.chat.model_picker import ModelPicker
from app.settings.store import Settings
from engine.paths import user_path

DEFAULT_CONTEXT_LENGTH = 4096  # what attachments are measured against while no model is loaded


class ChatModel(QObject):
    """The chat's model: `path` ("": the window's, the model loaded last), `ready` and `waiting`."""

    chosen = Signal(str)  # the path the user picked in the header (or the history restored)

    def __init__(self, bridge: EngineBridge, chat_id: Callable[[], str], settings: Settings | None,
                 parent: QWidget) -> None:
        super().__init__(parent)
        self._bridge, self._chat_id, self._settings = bridge, chat_id, settings
        self.path = ""
        self.ready = False
        self.waiting = False  # no model yet, but one is loading: a message sent now is queued for it
        self.picker = ModelPicker(parent)  # the header's choice of model
        self.picker.model_chosen.connect(self._on_picked)

    def set_path(self, path: str) -> None:
        """The model, as chosen elsewhere (emits nothing)."""
        self.path = path
        self.picker.set_path(path)

    def choose(self, path: str) -> None:
        """As if the user picked `path` in the header."""
        self.set_path(path)
        self.chosen.emit(path)

    def _on_picked(self, path: str) -> None:
        self.path = path
        self.chosen.emit(path)

    def set_ready(self, ready: bool, waiting: bool) -> None:
        """`waiting`: a model is loading for the chat (counts only while it is not ready)."""
        self.ready = ready
        self.waiting = waiting and not ready

    @property
    def takes_messages(self) -> bool:
        """A message can be sent now or queued until the model has loaded."""
        return self.ready or self.waiting

    def info(self) -> ModelInfo | None:
        """What the engine loaded for this chat (its own model, not the one loaded last); None while it loads."""
        return self._bridge.chat_model_info(self._chat_id())

    def context_length(self) -> int:
        info = self.info()
        return info.context_length if info is not None else DEFAULT_CONTEXT_LENGTH

    def document_vectors(self) -> Vectors | None:
        """The embedding Settings asks attached documents to be searched with, besides their words."""
        if self._settings is None:
            return None
        return document_vectors(self._settings.get("documents.embeddings"),
                                user_path(self._settings.get("documents.embedding_model")), self.info(),
                                lambda path: self._bridge.embedder(path))

"""EngineBridge: the one module where Qt meets the engine thread.

GUI -> engine: methods that put a command on the engine's queue and return at
once. Engine -> GUI: the engine calls `_engine_event.emit` on its own thread;
Qt's automatic connection queues that to the GUI thread, where the event is
re-dispatched to a typed signal. No other module of app/ reaches the engine's
insides (loop, scheduler, slots, runners; tests/test_boundary.py checks it);
they import the Qt-free engine.protocol and engine.catalog directly.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from PySide6.QtCore import QObject, Signal, Slot

from engine.loop import EngineLoop
from engine.protocol import (
    Cancel,
    ChatError,
    ChatMessage,
    CloseChat,
    EngineError,
    EngineStats,
    Event,
    LoadModel,
    ModelConfig,
    ModelInfo,
    ModelLoaded,
    ModelLoadFailed,
    ModelLoading,
    SamplingParams,
    Submit,
    Token,
    TurnFinished,
    TurnStarted,
    TurnStats,
)

from app.misc.qt_compat import guard_emit_refcount_bug

log = logging.getLogger(__name__)
guard_emit_refcount_bug()  # before the first token is streamed (see app/misc/qt_compat.py)

__all__ = [
    "ChatMessage",
    "EngineBridge",
    "EngineStats",
    "ModelConfig",
    "ModelInfo",
    "SamplingParams",
    "TurnFinished",
    "TurnStarted",
    "TurnStats",
]


class EngineBridge(QObject):
    """Owns the engine thread for the life of the window; all signals arrive on the GUI thread."""

    token_received = Signal(str, str)  # chat_id, text
    turn_started = Signal(object)  # TurnStarted
    turn_finished = Signal(object)  # TurnFinished
    stats_updated = Signal(object)  # EngineStats
    chat_error = Signal(str, str)  # chat_id, message
    model_loading = Signal(float, str)  # fraction 0..1, message
    model_loaded = Signal(object)  # ModelInfo
    model_load_failed = Signal(str)  # message for a person
    engine_failed = Signal(str)  # message for a person

    # Emitted on the engine thread; the connection is queued to the GUI thread.
    _engine_event = Signal(object)

    def __init__(self, parent: QObject | None = None, stats_interval_s: float = 0.5) -> None:
        super().__init__(parent)
        self._stats_interval_s = stats_interval_s
        self._loop: EngineLoop | None = None
        self._model_info: ModelInfo | None = None
        self._config: ModelConfig | None = None
        self._loading = False
        self._dispatch: dict[type, Callable[[Any], None]] = {
            Token: self._on_token,
            TurnStarted: self.turn_started.emit,
            TurnFinished: self.turn_finished.emit,
            EngineStats: self.stats_updated.emit,
            ChatError: self._on_chat_error,
            ModelLoading: self._on_model_loading,
            ModelLoaded: self._on_model_loaded,
            ModelLoadFailed: self._on_model_load_failed,
            EngineError: self._on_engine_error,
        }
        self._engine_event.connect(self._on_engine_event)

    # ------------------------------------------------------------ state

    @property
    def model_info(self) -> ModelInfo | None:
        """The model in use, as the engine reported it; None while there is none."""
        return self._model_info

    @property
    def model_config(self) -> ModelConfig | None:
        """The config last asked for (loaded or loading)."""
        return self._config

    @property
    def loading(self) -> bool:
        return self._loading

    @property
    def running(self) -> bool:
        return self._loop is not None and self._loop.running

    # ------------------------------------------------------------ GUI -> engine

    def start(self) -> None:
        """Start the engine thread (idle until a model is loaded)."""
        if self.running:
            return
        self._loop = EngineLoop(emit=self._engine_event.emit, stats_interval_s=self._stats_interval_s)
        self._loop.start()

    def load_model(self, config: ModelConfig) -> None:
        """Load in the background; progress, then model_loaded or model_load_failed."""
        self._config = config
        self._loading = True
        self._send(LoadModel(config))

    def submit(self, chat_id: str, messages: Sequence[ChatMessage], sampling: SamplingParams) -> None:
        self._send(Submit(chat_id, tuple(messages), sampling))

    def cancel(self, chat_id: str) -> None:
        self._send(Cancel(chat_id))

    def close_chat(self, chat_id: str) -> None:
        """The tab is gone: the engine cancels its turn and frees its slot."""
        self._send(CloseChat(chat_id))

    def cancel_load(self) -> None:
        if self._loop is not None:
            self._loop.cancel_load()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop the engine thread and wait for it; safe to call twice."""
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.shutdown(timeout)

    def restart(self) -> None:
        """A fresh engine thread after a failure, reloading the last model."""
        self.shutdown()
        self._model_info = None
        self.start()
        if self._config is not None:
            self.load_model(self._config)

    def _send(self, command: object) -> None:
        if self._loop is None:
            self.start()
        assert self._loop is not None
        self._loop.send(command)  # type: ignore[arg-type]

    # ------------------------------------------------------------ engine -> GUI

    @Slot(object)
    def _on_engine_event(self, event: Event) -> None:
        handler = self._dispatch.get(type(event))
        if handler is None:
            log.warning("unknown engine event %r", event)
            return
        handler(event)

    def _on_token(self, event: Token) -> None:
        self.token_received.emit(event.chat_id, event.text)

    def _on_chat_error(self, event: ChatError) -> None:
        self.chat_error.emit(event.chat_id, event.message)

    def _on_model_loading(self, event: ModelLoading) -> None:
        self._loading = True
        self.model_loading.emit(event.fraction, event.message)

    def _on_model_loaded(self, event: ModelLoaded) -> None:
        self._loading = False
        self._model_info = event.info
        self.model_loaded.emit(event.info)

    def _on_model_load_failed(self, event: ModelLoadFailed) -> None:
        self._loading = False
        if not event.previous_kept:
            self._model_info = None
        self.model_load_failed.emit(event.message)

    def _on_engine_error(self, event: EngineError) -> None:
        self._loading = False
        self._model_info = None
        self.engine_failed.emit(event.message)

"""EngineBridge: the one module where Qt meets the engine thread.

GUI -> engine: methods that put a command on the engine's queue and return at
once. Engine -> GUI: the engine calls `_engine_event.emit` on its own thread;
Qt's automatic connection queues that to the GUI thread, where the event is
re-dispatched to a typed signal. The bridge owns the window process's engine
(an EngineHost, engine/clients.py) and is one client of it; the local API
server is another, attached through `engine_host`. No other module of app/
reaches the engine's insides (the host, loop, scheduler, slots, runners;
tests/test_boundary.py checks it); they import the Qt-free engine.protocol,
engine.catalog and engine.server directly.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Mapping, Sequence

from PySide6.QtCore import QObject, Signal, Slot

from engine.clients import EngineHost
from engine.embed_client import EngineEmbedder
from engine.protocol import (
    Cancel,
    ChatError,
    ChatMessage,
    CloseChat,
    Command,
    EngineError,
    EngineOptions,
    EngineStats,
    Event,
    LoadModel,
    ModelConfig,
    ModelInfo,
    ModelLoaded,
    ModelLoadFailed,
    ModelLoading,
    ModelUnloaded,
    ReasoningText,
    SamplingParams,
    Submit,
    Token,
    ToolCallArguments,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
    TurnQueued,
    TurnStarted,
    TurnStats,
    UnloadModel,
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
    reasoning_received = Signal(str, str)  # chat_id, a reasoning model's thinking (kept apart from the answer)
    turn_started = Signal(object)  # TurnStarted
    turn_finished = Signal(object)  # TurnFinished
    stats_updated = Signal(object)  # EngineStats
    chat_error = Signal(str, str)  # chat_id, message
    model_loading = Signal(float, str)  # fraction 0..1, message
    model_loaded = Signal(object)  # ModelInfo
    model_load_failed = Signal(str)  # message for a person
    engine_failed = Signal(str)  # message for a person
    # Several models: the same events with the path of the model they are about.
    model_loading_at = Signal(str, float, str)  # path, fraction, message
    model_failed_at = Signal(str, str)  # path, message
    model_unloaded = Signal(object)  # ModelUnloaded

    # Emitted on the engine thread; the connection is queued to the GUI thread.
    _engine_event = Signal(object)

    def __init__(self, parent: QObject | None = None, stats_interval_s: float = 0.5) -> None:
        super().__init__(parent)
        self._host = EngineHost(stats_interval_s)
        self._client = self._host.attach("window", self._engine_event.emit)
        self._model_info: ModelInfo | None = None
        self._config: ModelConfig | None = None
        self._loading = False
        self.loaded_models: dict[str, ModelInfo] = {}  # path -> what the engine loaded there
        self.loading_models: dict[str, float] = {}  # path -> fraction, while it loads
        self._chat_models: dict[str, str] = {}  # chat id -> the path its Submits name ("" : the model loaded last)
        # path -> how it was last asked for: a turn for a model unloaded while idle loads it again first
        self._asked: dict[str, tuple[ModelConfig, float | None]] = {}
        self._dispatch: dict[type, Callable[[Any], None]] = {
            Token: self._on_token,
            ReasoningText: lambda event: self.reasoning_received.emit(event.chat_id, event.text),
            TurnQueued: lambda event: None,  # a tab shows its turn once it starts
            # A tab shows a tool call once its turn has finished with it whole (TurnFinished.tool_calls).
            ToolCallStarted: lambda event: None,
            ToolCallArguments: lambda event: None,
            TurnStarted: self.turn_started.emit,
            TurnFinished: self.turn_finished.emit,
            EngineStats: self.stats_updated.emit,
            ChatError: self._on_chat_error,
            ModelLoading: self._on_model_loading,
            ModelLoaded: self._on_model_loaded,
            ModelLoadFailed: self._on_model_load_failed,
            ModelUnloaded: self._on_model_unloaded,
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
        return self._host.running

    @property
    def engine_host(self) -> EngineHost:
        """The engine this window shares with its other clients (the local API server)."""
        return self._host

    def embedder(self, model_path: str) -> EngineEmbedder:
        """Texts to vectors with a loaded model, for a thread that may wait (the document worker)."""
        return EngineEmbedder(self._host, model_path)

    # ------------------------------------------------------------ GUI -> engine

    def start(self) -> None:
        """Start the engine thread (idle until a model is loaded)."""
        self._host.start()

    def load_model(self, config: ModelConfig, keep_alive_s: float | None = None) -> None:
        """Load in the background, beside the models loaded already (the same path: instead of it);
        progress, then model_loaded or model_load_failed."""
        self._config = config
        self._asked[config.path] = (config, keep_alive_s)
        self._loading = True
        self.loading_models[config.path] = 0.0
        self._send(LoadModel(config, keep_alive_s))

    def unload_model(self, path: str) -> None:
        self._send(UnloadModel(path))

    def set_options(self, options: EngineOptions) -> None:
        """The memory budget and keep-alive the engine keeps its models with."""
        self._send(options)

    def chat_model_info(self, chat_id: str) -> ModelInfo | None:
        return model_of_chat(self._chat_models.get(chat_id, ""), self.loaded_models, self._model_info)

    def set_chat_model(self, chat_id: str, path: str) -> None:
        """The model this chat's turns go to from now on ("" : the model loaded last)."""
        self._chat_models[chat_id] = path

    def submit(self, chat_id: str, messages: Sequence[ChatMessage], sampling: SamplingParams,
               template_options: tuple[tuple[str, str], ...] = (), tools: tuple[ToolSpec, ...] = (),
               tool_choice: str = "auto") -> None:
        """One turn; `template_options`: the chat template's variables (the chat's Think choice);
        `tools`: the MCP tools the model may call (the calls come back in TurnFinished.tool_calls).
        A chat whose model was unloaded (idle, or to make room) loads it again: the turn waits for it."""
        self._load_again(self._chat_models.get(chat_id, ""))
        self._send(Submit(chat_id, tuple(messages), sampling, template_options=tuple(template_options),
                          tools=tuple(tools), tool_choice=tool_choice, model=self._chat_models.get(chat_id, "")))

    def _load_again(self, path: str) -> None:
        again = load_again(path, self.loaded_models, self.loading_models, self._asked)
        if again is not None:
            self._loading = True
            self.loading_models[path] = 0.0
            self._send(LoadModel(*again))

    def cancel(self, chat_id: str) -> None:
        self._send(Cancel(chat_id))

    def close_chat(self, chat_id: str) -> None:
        """The tab is gone: the engine cancels its turn and frees its slot."""
        self._chat_models.pop(chat_id, None)
        self._send(CloseChat(chat_id))

    def cancel_load(self) -> None:
        self._host.cancel_load()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop the engine thread and wait for it; safe to call twice."""
        self._host.shutdown(timeout)

    def restart(self) -> None:
        """A fresh engine thread after a failure, reloading the last model."""
        self.shutdown()
        self._model_info = None
        self.loaded_models.clear()
        self.loading_models.clear()
        self.start()
        if self._config is not None:
            self.load_model(self._config)

    def _send(self, command: Command) -> None:
        if not self._host.running:
            self.start()
        self._client.send(command)

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
        self.loading_models[event.path] = event.fraction
        self.model_loading.emit(event.fraction, event.message)
        self.model_loading_at.emit(event.path, event.fraction, event.message)

    def _on_model_loaded(self, event: ModelLoaded) -> None:
        self.loading_models.pop(event.info.path, None)
        self._loading = bool(self.loading_models)
        self._model_info = event.info
        self.loaded_models[event.info.path] = event.info
        self.model_loaded.emit(event.info)

    def _on_model_load_failed(self, event: ModelLoadFailed) -> None:
        self.loading_models.pop(event.path, None)
        self._loading = bool(self.loading_models)
        if not event.previous_kept:
            self.loaded_models.pop(event.path, None)
            if self._model_info is not None and self._model_info.path == event.path:
                self._model_info = next(reversed(self.loaded_models.values()), None)
        self.model_failed_at.emit(event.path, event.message)
        self.model_load_failed.emit(event.message)

    def _on_model_unloaded(self, event: ModelUnloaded) -> None:
        self.loaded_models.pop(event.path, None)
        if self._model_info is not None and self._model_info.path == event.path:
            self._model_info = next(reversed(self.loaded_models.values()), None)
        self.model_unloaded.emit(event)

    def _on_engine_error(self, event: EngineError) -> None:
        self._loading = False
        self._model_info = None
        self.loaded_models.clear()
        self.loading_models.clear()
        self.engine_failed.emit(event.message)


def model_of_chat(path: str, loaded: Mapping[str, ModelInfo], last: ModelInfo | None) -> ModelInfo | None:
    """What a chat talks to: the model its Submits name once it names one (None until that one is loaded),
    else the model loaded last."""
    return loaded.get(path) if path else last


def load_again(path: str, loaded: Mapping[str, object], loading: Mapping[str, float],
               asked: Mapping[str, tuple[ModelConfig, float | None]]) -> tuple[ModelConfig, float | None] | None:
    """How to load a chat's model again before its turn: it was asked for once and is neither loaded nor
    loading now (unloaded while idle, or to make room). None: nothing to load."""
    if not path or path in loaded or path in loading:
        return None
    return asked.get(path)

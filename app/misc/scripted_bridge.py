"""A stand-in for EngineBridge: the same signals, driven by a script instead of a model.

Widget tests use it where the model adds nothing to what they check (titles, notes, buttons,
the history's bookkeeping); the GUI probe (app/misc/gui_probe.py) streams scripted answers
through it to measure the window alone. Everything that streams from a model in a test uses
the real bridge.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal
from app.bridge import load_again, model_of_chat

from engine.protocol import (ChatMessage, EngineOptions, EngineStats, ModelConfig, ModelInfo, ModelStats, ModelUnloaded,
                             SamplingParams, ToolCall, ToolSpec, TurnFinished, TurnStarted, TurnStats)

NO_STATS = TurnStats(0, 0, 0, 0.0, 0.0, 0.0)


def model_info(path: str = "/models/test.gguf", **changes: object) -> ModelInfo:
    values: dict[str, object] = dict(name="Test model", path=path, backend="llamacpp", device="cpu",
                                     quantization="Q4_1", attention="flash attention on", context_length=4096,
                                     slots=4, model_bytes=100 << 20, kv_cache_bytes=360 << 20, gpu_offload=False)
    values.update(changes)
    return ModelInfo(**values)  # type: ignore[arg-type]


class ScriptedBridge(QObject):
    """Records what the window asks for; the test says what the engine answers."""

    token_received = Signal(str, str)
    reasoning_received = Signal(str, str)  # a reasoning model's thinking (`think`, `answer(reasoning=...)`)
    turn_started = Signal(object)
    turn_finished = Signal(object)
    stats_updated = Signal(object)
    chat_error = Signal(str, str)
    model_loading = Signal(float, str)
    model_loaded = Signal(object)
    model_load_failed = Signal(str)
    engine_failed = Signal(str)
    model_loading_at = Signal(str, float, str)
    model_failed_at = Signal(str, str)
    model_unloaded = Signal(object)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.model_info: ModelInfo | None = None
        self.model_config: ModelConfig | None = None
        self.loading = False
        self.running = False
        self.submitted: list[tuple[str, tuple[ChatMessage, ...], SamplingParams]] = []
        self.template_options: list[tuple[tuple[str, str], ...]] = []  # each submit's, in the same order
        self.tools: list[tuple[ToolSpec, ...]] = []  # each submit's tools, in the same order
        self.tool_choices: list[str] = []  # each submit's tool_choice, in the same order
        self.cancelled: list[str] = []
        self.closed: list[str] = []
        # Several models: what was asked of the engine, and what it holds now.
        self.loads: list[tuple[ModelConfig, float | None]] = []  # every LoadModel, in order
        self.unloads: list[str] = []
        self.options: list[EngineOptions] = []
        self.models: list[str] = []  # each submit's Submit.model, in the same order as `submitted`
        self.loaded_models: dict[str, ModelInfo] = {}
        self.loading_models: dict[str, float] = {}
        self.chat_models: dict[str, str] = {}
        self._asked: dict[str, tuple[ModelConfig, float | None]] = {}

    # ------------------------------------------------------------ what the window calls

    def start(self) -> None:
        self.running = True

    def load_model(self, config: ModelConfig, keep_alive_s: float | None = None) -> None:
        self.model_config, self.loading = config, True
        self.loads.append((config, keep_alive_s))
        self._asked[config.path] = (config, keep_alive_s)
        self.loading_models[config.path] = 0.0

    def unload_model(self, path: str) -> None:
        self.unloads.append(path)

    def set_options(self, options: EngineOptions) -> None:
        self.options.append(options)

    def chat_model_info(self, chat_id: str) -> ModelInfo | None:
        return model_of_chat(self.chat_models.get(chat_id, ""), self.loaded_models, self.model_info)

    def set_chat_model(self, chat_id: str, path: str) -> None:
        self.chat_models[chat_id] = path

    def submit(self, chat_id: str, messages: Sequence[ChatMessage], sampling: SamplingParams,
               template_options: tuple[tuple[str, str], ...] = (), tools: tuple[ToolSpec, ...] = (),
               tool_choice: str = "auto") -> None:
        again = load_again(self.chat_models.get(chat_id, ""), self.loaded_models, self.loading_models, self._asked)
        if again is not None:  # as the real bridge: a model unloaded while idle is loaded again first
            self.loads.append(again)
            self.loading_models[again[0].path] = 0.0
        self.submitted.append((chat_id, tuple(messages), sampling))
        self.models.append(self.chat_models.get(chat_id, ""))
        self.template_options.append(tuple(template_options))
        self.tools.append(tuple(tools))
        self.tool_choices.append(tool_choice)

    def cancel(self, chat_id: str) -> None:
        self.cancelled.append(chat_id)

    def close_chat(self, chat_id: str) -> None:
        self.closed.append(chat_id)

    def cancel_load(self) -> None:
        self.loading = False

    def shutdown(self, timeout: float = 10.0) -> None:
        self.running = False

    def restart(self) -> None:
        self.running = True

    # ------------------------------------------------------------ what the test makes the engine say

    def finish_loading(self, info: ModelInfo) -> None:
        self.loading_models.pop(info.path, None)
        self.loaded_models[info.path] = info
        self.loading, self.model_info = bool(self.loading_models), info
        self.model_loaded.emit(info)

    def progress(self, path: str, fraction: float, message: str = "") -> None:
        """ModelLoading for that path."""
        self.loading_models[path] = fraction
        self.model_loading.emit(fraction, message)
        self.model_loading_at.emit(path, fraction, message)

    def fail_loading(self, path: str, message: str) -> None:
        self.loading_models.pop(path, None)
        self.loading = bool(self.loading_models)
        self.model_failed_at.emit(path, message)
        self.model_load_failed.emit(message)

    def unloaded(self, path: str, reason: str = "idle", message: str = "") -> None:
        self.loaded_models.pop(path, None)
        self.model_unloaded.emit(ModelUnloaded(path, reason, message))  # type: ignore[arg-type]

    def answer(self, chat_id: str, *chunks: str, reason: str = "stop", reasoning: Sequence[str] = (),
               stats: TurnStats = NO_STATS) -> None:
        """One whole turn: started, each thinking chunk, each chunk as a token, finished with their text."""
        self.turn_started.emit(TurnStarted(chat_id, prompt_tokens=10, reused_tokens=0))
        self.think(chat_id, *reasoning)
        for chunk in chunks:
            self.token_received.emit(chat_id, chunk)
        self.finish(chat_id, "".join(chunks), "".join(reasoning), reason, stats)

    def think(self, chat_id: str, *chunks: str) -> None:
        """Thinking chunks of the turn under way (a turn_started comes first: `begin_turn`, or `answer`)."""
        for chunk in chunks:
            self.reasoning_received.emit(chat_id, chunk)

    def begin_turn(self, chat_id: str) -> None:
        self.turn_started.emit(TurnStarted(chat_id, prompt_tokens=10, reused_tokens=0))

    def finish(self, chat_id: str, text: str, reasoning: str = "", reason: str = "stop", stats: TurnStats = NO_STATS) -> None:
        self.turn_finished.emit(TurnFinished(chat_id, reason, stats, text, reasoning=reasoning))  # type: ignore[arg-type]

    def call_tools(self, chat_id: str, *calls: ToolCall, text: str = "") -> None:
        """A whole turn that ends in tool calls (reason "tool_calls"), as the engine's parser reports it."""
        self.begin_turn(chat_id)
        self.turn_finished.emit(TurnFinished(chat_id, "tool_calls", NO_STATS, text, tool_calls=tuple(calls)))

    def stats(self, **changes: object) -> None:
        values: dict[str, object] = dict(tokens_per_second=0.0, chat_tokens_per_second=(), slots_busy=0,
                                         slots_total=4, kv_cache_bytes=360 << 20, model_bytes=100 << 20,
                                         total_generated_tokens=0)
        values.update(changes)
        self.stats_updated.emit(EngineStats(**values))  # type: ignore[arg-type]


def model_stats(info: ModelInfo, **changes: object) -> ModelStats:
    """One loaded model's line of EngineStats.models, as the engine reports it."""
    values: dict[str, object] = dict(path=info.path, name=info.name, tokens_per_second=0.0, slots_busy=0,
                                     slots_total=info.slots, model_bytes=info.model_bytes,
                                     kv_cache_bytes=info.kv_cache_bytes)
    values.update(changes)
    return ModelStats(**values)  # type: ignore[arg-type]

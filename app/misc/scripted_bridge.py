"""A stand-in for EngineBridge: the same signals, driven by a script instead of a model.

Widget tests use it where the model adds nothing to what they check (titles, notes, buttons,
the history's bookkeeping); the GUI probe (app/misc/gui_probe.py) streams scripted answers
through it to measure the window alone. Everything that streams from a model in a test uses
the real bridge.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QObject, Signal

from engine.protocol import ChatMessage, EngineStats, ModelConfig, ModelInfo, SamplingParams, TurnFinished, TurnStarted, TurnStats

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
    reasoning_received = Signal(str, str)  # the remote backend's thinking; this bridge never sends any
    turn_started = Signal(object)
    turn_finished = Signal(object)
    stats_updated = Signal(object)
    chat_error = Signal(str, str)
    model_loading = Signal(float, str)
    model_loaded = Signal(object)
    model_load_failed = Signal(str)
    engine_failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.model_info: ModelInfo | None = None
        self.model_config: ModelConfig | None = None
        self.loading = False
        self.running = False
        self.submitted: list[tuple[str, tuple[ChatMessage, ...], SamplingParams]] = []
        self.cancelled: list[str] = []
        self.closed: list[str] = []

    # ------------------------------------------------------------ what the window calls

    def start(self) -> None:
        self.running = True

    def load_model(self, config: ModelConfig) -> None:
        self.model_config, self.loading = config, True

    def submit(self, chat_id: str, messages: Sequence[ChatMessage], sampling: SamplingParams) -> None:
        self.submitted.append((chat_id, tuple(messages), sampling))

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
        self.loading, self.model_info = False, info
        self.model_loaded.emit(info)

    def answer(self, chat_id: str, *chunks: str, reason: str = "stop") -> None:
        """One whole turn: started, each chunk as a token, finished with their text."""
        self.turn_started.emit(TurnStarted(chat_id, prompt_tokens=10, reused_tokens=0))
        for chunk in chunks:
            self.token_received.emit(chat_id, chunk)
        self.turn_finished.emit(TurnFinished(chat_id, reason, NO_STATS, "".join(chunks)))  # type: ignore[arg-type]

    def stats(self, **changes: object) -> None:
        values: dict[str, object] = dict(tokens_per_second=0.0, chat_tokens_per_second=(), slots_busy=0,
                                         slots_total=4, kv_cache_bytes=360 << 20, model_bytes=100 << 20,
                                         total_generated_tokens=0)
        values.update(changes)
        self.stats_updated.emit(EngineStats(**values))  # type: ignore[arg-type]

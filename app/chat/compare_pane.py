"""One model's answer in Compare: its name, the answer streaming, and its tokens/s, time to first token and memory.

A pane is a chat of its own in the engine (its own chat id, naming its model), so the panes of one
comparison stream at once, batched where they share a model and stepped in turn where they do not.
Tokens are buffered and shown on a ~30 ms tick, as in a chat tab.
"""

from __future__ import annotations

import uuid

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QTextBrowser, QVBoxLayout, QWidget

from app.bridge import ChatMessage, TurnFinished
from engine.units import format_bytes

FLUSH_INTERVAL_MS = 30


class ComparePane(QFrame):
    """Events arrive through the window (routed by `chat_id`), as a tab's do."""

    continue_requested = Signal(object)  # this pane: "Continue this one"

    def __init__(self, path: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.path, self.name = path, name
        self.chat_id = "compare-" + uuid.uuid4().hex
        self.answering = False
        self.question = ""
        self.text = ""
        self.memory_bytes = 0
        self.tokens_per_second = 0.0
        self.ttft_s: float | None = None
        self._pending: list[str] = []
        self.title_label = QLabel(f"<b>{name}</b>")
        self.title_label.setToolTip(path)
        self.view = QTextBrowser()
        self.view.setOpenExternalLinks(True)
        self.stats_label = QLabel()
        self.stats_label.setProperty("role", "hint")
        self.continue_button = QPushButton("Continue this one")
        self.continue_button.setToolTip("Open this answer as a normal chat with this model")
        self.continue_button.setEnabled(False)
        self.continue_button.clicked.connect(lambda: self.continue_requested.emit(self))
        bottom = QHBoxLayout()
        bottom.addWidget(self.stats_label, 1)
        bottom.addWidget(self.continue_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.title_label)
        layout.addWidget(self.view, 1)
        layout.addLayout(bottom)
        self._timer = QTimer(self, interval=FLUSH_INTERVAL_MS)
        self._timer.timeout.connect(self._flush)
        self._show_stats()

    @property
    def title(self) -> str:
        return f"Compare: {self.name}"

    def conversation(self) -> list[ChatMessage]:
        """What this pane holds, as a chat: the question and this model's answer."""
        return [ChatMessage("user", self.question), ChatMessage("assistant", self.text)] if self.text else []

    def begin(self, question: str) -> None:
        self.question, self.text, self._pending = question, "", []
        self.ttft_s, self.tokens_per_second = None, 0.0
        self.answering = True
        self.view.setPlainText("…")
        self.continue_button.setEnabled(False)
        self._timer.start()
        self._show_stats()

    def wait(self, why: str) -> None:
        """The model is not ready yet (loading): say so in the pane."""
        self.view.setPlainText(why)

    def set_memory(self, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self._show_stats()

    # ------------------------------------------------------------ engine events (the window routes them)

    def on_token(self, text: str) -> None:
        self._pending.append(text)

    def on_reasoning(self, text: str) -> None:
        pass  # the comparison shows answers; thinking stays folded away in a chat

    def on_stats(self, tokens_per_second: float) -> None:
        self.tokens_per_second = tokens_per_second
        self._show_stats()

    def on_chat_error(self, message: str) -> None:
        self.view.setPlainText(message)

    def on_turn_finished(self, event: TurnFinished) -> None:
        self._flush()
        self._timer.stop()
        self.answering = False
        self.text = event.text or self.text
        self.tokens_per_second = event.stats.decode_tokens_per_second
        self.ttft_s = event.stats.time_to_first_token_s
        self.view.setMarkdown(self.text) if self.text else self.view.setPlainText(event.message or "(no answer)")
        self.continue_button.setEnabled(bool(self.text))
        self._show_stats()

    def _flush(self) -> None:
        if self._pending:
            self.text += "".join(self._pending)
            self._pending.clear()
            self.view.setPlainText(self.text)

    def stats_text(self) -> str:
        ttft = f"TTFT {self.ttft_s * 1000:.0f} ms" if self.ttft_s is not None else "TTFT …"
        memory = format_bytes(self.memory_bytes) if self.memory_bytes else "memory …"
        return f"{self.tokens_per_second:.1f} tok/s · {ttft} · {memory}"

    def _show_stats(self) -> None:
        self.stats_label.setText(self.stats_text())

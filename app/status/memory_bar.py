"""One memory bar for the gauge and the settings dialog: coloured parts against a scale, and what is free.

The parts (the model's weights, its KV cache, the rest) are drawn left to right
at their share of `scale`; a part that would run past the end is cut there.
`free_bytes`, when given, is a line where the free memory ends, so a part that
crosses it is what does not fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QWidget

WEIGHTS_COLOR, KV_COLOR, OTHER_COLOR = QColor("#3b82f6"), QColor("#f59e0b"), QColor("#9ca3af")
PROMPT_COPY_COLOR = QColor("#8b5cf6")  # llama.cpp's F32 copy for reading prompts
EMBEDDING_COLOR = QColor("#10b981")  # the documents' GGUF embedding model
DRAFT_MODEL_COLOR = QColor("#ec4899")  # a draft model loaded beside the model (speculative decoding)
VOICE_COLOR = QColor("#06b6d4")  # the speech-to-text model and the voice (dictation, read aloud, the API's audio)


@dataclass(frozen=True)
class BarPart:
    name: str
    size: int  # bytes
    color: QColor


class MemoryBar(QWidget):
    """Parts of one bar; its size is the caller's (a small fixed one in the status bar, a wide one in a dialog)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.parts: tuple[BarPart, ...] = ()
        self.scale = 1
        self.free_bytes: int | None = None

    def set_parts(self, parts: Sequence[BarPart], scale: int, free_bytes: int | None = None) -> None:
        self.parts, self.scale, self.free_bytes = tuple(parts), max(scale, 1), free_bytes
        self.update()

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.fillRect(self.rect(), self.palette().color(QPalette.ColorRole.Base))
        inner = self.width() - 2
        x = 0.0
        for part in self.parts:
            width = min(inner * part.size / self.scale, inner - x)
            painter.fillRect(QRectF(1 + x, 1, max(width, 0.0), self.height() - 2), part.color)
            x += max(width, 0.0)
        painter.setPen(self.palette().color(QPalette.ColorRole.Mid))
        painter.drawRect(self.rect().adjusted(0, 0, -1, -1))
        if self.free_bytes is not None:
            painter.setPen(self.palette().color(QPalette.ColorRole.Text))
            free_x = 1 + int(inner * min(self.free_bytes / self.scale, 1.0))
            painter.drawLine(free_x, 0, free_x, self.height())
        painter.end()

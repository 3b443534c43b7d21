"""The gauge's sparkline: tokens/s over the last 60 seconds, drawn newest at the right."""

from __future__ import annotations

import time
from collections import deque

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QPainter, QPainterPath, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QWidget

HISTORY_S = 60.0


class Sparkline(QWidget):
    """Tokens/s over the last 60 seconds, newest at the right."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.samples: deque[tuple[float, float]] = deque()
        self.setFixedSize(90, 18)
        self.setToolTip("tokens/s, last 60 s")

    def add(self, value: float, now: float) -> None:
        self.samples.append((now, value))
        while self.samples and now - self.samples[0][0] > HISTORY_S:
            self.samples.popleft()
        self.update()

    def has_recent_speed(self, now: float) -> bool:
        return any(value > 0 and now - t <= HISTORY_S for t, value in self.samples)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Mid), 1))
        painter.drawRect(QRectF(0.5, 0.5, self.width() - 1, self.height() - 1))
        if not self.samples:
            return
        now, top = time.monotonic(), max(max(v for _, v in self.samples), 1.0)
        width, height = self.width() - 2, self.height() - 3
        path = QPainterPath()
        for i, (t, value) in enumerate(self.samples):
            point = QPointF(1 + width * (1 - (now - t) / HISTORY_S), 1.5 + height * (1 - value / top))
            path.moveTo(point) if i == 0 else path.lineTo(point)
        painter.setPen(QPen(self.palette().color(QPalette.ColorRole.Highlight), 1.5))
        painter.drawPath(path)

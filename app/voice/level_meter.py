"""The microphone's level meter, with hands-free's speech threshold drawn on it as a marker.

The bar shows how loud the microphone hears you on the same decibel scale as `level` (-60 dBFS at its
left end, 0 at its right); the marker stands where Settings > Voice's speech threshold is on that
scale, so the person sees where their voice starts to count as speech (and a pause begins below it).
Without hands-free there is no threshold and no marker.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QProgressBar, QWidget

from app.voice.microphone import FLOOR_DB

MARKER_COLOR = "#d32f2f"


def meter_value(decibels: float) -> float:
    """Where `decibels` (dBFS) stands on the meter, 0 to 100."""
    return min(max((decibels - FLOOR_DB) / -FLOOR_DB, 0.0), 1.0) * 100.0


class LevelMeter(QProgressBar):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setRange(0, 100)
        self.setTextVisible(False)
        self.threshold: float | None = None  # the marker's place, 0 to 100; None: no marker

    def show_threshold(self, decibels: float | None) -> None:
        self.threshold = None if decibels is None else meter_value(decibels)
        tip = "How loud the microphone hears you"
        if decibels is not None:
            tip += f"; the mark is the speech threshold ({decibels:g} dBFS): above it counts as speech"
        self.setToolTip(tip)
        self.update()

    def marker_x(self) -> int | None:
        """The marker's column in the meter's pixels (None: no marker)."""
        if self.threshold is None:
            return None
        return min(round(self.threshold / 100.0 * self.width()), self.width() - 1)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        x = self.marker_x()
        if x is None:
            return
        painter = QPainter(self)
        painter.setPen(QPen(QColor(MARKER_COLOR), 2))
        painter.drawLine(QPointF(x, 0), QPointF(x, self.height()))
        painter.end()

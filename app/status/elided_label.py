"""A one-line label that ends in "…" when the status bar has less room than its text needs.

A plain QLabel in a crowded status bar is cut off at the window's edge mid-word
("flash atten"); this one gives up its width first and says where it cut.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetricsF, QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

MIN_CHARS = 12  # below this it stops shrinking: a stub of a name says nothing


class ElidedLabel(QLabel):
    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)

    def shown_text(self) -> str:
        """What fits in the width the label has now."""
        return self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight, self.contentsRect().width())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        # whole pixels up, or the text needs a fraction more than it is given and loses its end
        width = math.ceil(QFontMetricsF(self.font()).horizontalAdvance(self.text())) + 1
        return QSize(width, super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(self.fontMetrics().averageCharWidth() * MIN_CHARS, super().minimumSizeHint().height())

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        painter.drawText(self.contentsRect(), int(self.alignment()), self.shown_text())

"""The dictation button's microphone, drawn (no image file, no emoji font needed): grey idle, red recording."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap

IDLE_COLOR, RECORDING_COLOR = "#5f6b7a", "#d32f2f"


def microphone_icon(recording: bool, size: int) -> QIcon:
    scale = 2  # drawn at twice the size: sharp on a high-density screen
    pixmap = QPixmap(size * scale, size * scale)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    side = float(size * scale)
    color = QColor(RECORDING_COLOR if recording else IDLE_COLOR)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(color)
    capsule = QRectF(side * 0.36, side * 0.08, side * 0.28, side * 0.5)
    painter.drawRoundedRect(capsule, side * 0.14, side * 0.14)
    pen = QPen(color, side * 0.07)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    painter.setPen(pen)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawArc(QRectF(side * 0.24, side * 0.2, side * 0.52, side * 0.5), 180 * 16, 180 * 16)  # the holder
    painter.drawLine(QPointF(side * 0.5, side * 0.7), QPointF(side * 0.5, side * 0.86))  # the stand
    painter.drawLine(QPointF(side * 0.36, side * 0.88), QPointF(side * 0.64, side * 0.88))
    painter.end()
    pixmap.setDevicePixelRatio(scale)
    return QIcon(pixmap)

"""Formulas drawn off the GUI thread: a browser asks, gets the image if it is drawn, and hears when it is.

matplotlib's mathtext takes ~0.1 s a formula here (and seconds for its fonts the
first time): too long for the GUI thread while answers stream. One daemon thread
draws in order of asking; `drawn` (queued to the GUI thread) says another one is
ready, and a browser that waited renders again. Until then, and for good where
mathtext cannot draw a formula, the browser shows the TeX source in monospace.
"""

from __future__ import annotations

import queue
import threading

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QImage

from app.chat.math_text import Formula, draw_png

THREAD_NAME = "math-drawing"
FAILED = "failed"
PENDING = "pending"


class MathImages(QObject):
    """Drawn formulas by resource name; `image()` never blocks."""

    drawn = Signal(str)  # the resource name of a formula now drawn (or failed)

    def __init__(self) -> None:
        super().__init__()
        self._images: dict[str, QImage | str] = {}  # name -> image, PENDING or FAILED
        self._lock = threading.Lock()
        self._requests: queue.Queue[tuple[str, Formula, str, float, float]] = queue.Queue()
        self._thread: threading.Thread | None = None

    def image(self, name: str, formula: Formula, color: str, points: float, ratio: float) -> QImage | str:
        """The drawn image, or PENDING (being drawn: `drawn(name)` follows), or FAILED (show the source)."""
        with self._lock:
            found = self._images.get(name)
            if found is None:
                self._images[name] = PENDING
        if found is not None:
            return found
        self._requests.put((name, formula, color, points, ratio))
        if self._thread is None:
            self._thread = threading.Thread(target=self._draw_forever, name=THREAD_NAME, daemon=True)
            self._thread.start()
        return PENDING

    def _draw_forever(self) -> None:
        while True:
            name, formula, color, points, ratio = self._requests.get()
            try:
                png = draw_png(formula.source, color, points, round(96 * ratio))
            except Exception:  # noqa: BLE001 - one bad formula never stops the drawing of every later one
                png = None
            image = QImage.fromData(png) if png else QImage()
            if not image.isNull():
                image.setDevicePixelRatio(ratio)
            with self._lock:
                self._images[name] = image if not image.isNull() else FAILED
            self.drawn.emit(name)


_shared: MathImages | None = None


def math_images() -> MathImages:
    """The one drawer of the application (made on the GUI thread on first use)."""
    global _shared
    if _shared is None:
        _shared = MathImages()
    return _shared

"""The status bar's API indicator: the URL and the requests in flight; a click copies the URL.

Hidden while the API is off. When it could not start (a port in use) it says
so in red, and a click asks to try again (`retry_requested`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication, QMouseEvent
from PySide6.QtWidgets import QLabel, QWidget


class ServerIndicator(QLabel):
    copied = Signal(str)  # the URL now on the clipboard
    retry_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("apiIndicator")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.url, self.error, self.in_flight = "", "", 0
        self.show_state("", 0, "")

    def show_state(self, url: str, in_flight: int, error: str) -> None:
        self.url, self.in_flight, self.error = url, in_flight, error
        self.setVisible(bool(url or error))
        if error:
            self.setText("API off: could not start")
            self.setProperty("state", "error")
            self.setToolTip(f"{error}\nClick to try again.")
        else:
            address = url.removeprefix("http://").removesuffix("/v1")
            self.setText(f"API {address} · {in_flight} request{'' if in_flight == 1 else 's'}")
            self.setProperty("state", "busy" if in_flight else "idle")
            self.setToolTip(f"OpenAI-compatible API at {url}\n{in_flight} in flight. Click to copy the URL.")
        self.style().unpolish(self)
        self.style().polish(self)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        if self.error:
            self.retry_requested.emit()
        elif self.url:
            QGuiApplication.clipboard().setText(self.url)
            self.copied.emit(self.url)

"""The status bar's small download indicator: what is downloading, a thin bar, and Cancel.

It shows while a download runs, so the dialog can be closed and chatting goes on;
a click on it opens the Get models dialog again.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QToolButton, QWidget

from app.models.downloads import DownloadManager, Downloaded, progress_text
from engine.hub.progress import DownloadProgress


class DownloadIndicator(QWidget):
    clicked = Signal()

    def __init__(self, downloads: DownloadManager, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.downloads = downloads
        self.label = QLabel()
        self.bar = QProgressBar(maximum=1000, textVisible=False)
        self.bar.setFixedWidth(90)
        self.bar.setFixedHeight(10)
        self.cancel_button = QToolButton()
        self.cancel_button.setText("✕")
        self.cancel_button.setToolTip("Cancel the download (what arrived is kept, and the next one resumes)")
        self.cancel_button.clicked.connect(downloads.cancel)
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 0, 4, 0)
        row.addWidget(self.label)
        row.addWidget(self.bar)
        row.addWidget(self.cancel_button)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        downloads.started.connect(self._on_started)
        downloads.progressed.connect(self._on_progressed)
        downloads.finished.connect(self._on_finished)
        downloads.failed.connect(self._on_failed)
        self.hide()

    @Slot(str)
    def _on_started(self, title: str) -> None:
        self.label.setText(f"⬇ {title.rsplit(' · ', 1)[-1]}")
        self.bar.setValue(0)
        self.bar.show()
        self.cancel_button.show()
        self.setToolTip(f"Downloading {title}")
        self.show()

    @Slot(object)
    def _on_progressed(self, progress: DownloadProgress) -> None:
        self.bar.setValue(int(progress.fraction * 1000))
        self.label.setText(f"⬇ {self.downloads.title.rsplit(' · ', 1)[-1]} {progress.fraction:.0%}")
        self.setToolTip(f"Downloading {self.downloads.title}\n{progress_text(progress)}\nClick for Get models")

    @Slot(object)
    def _on_finished(self, result: Downloaded) -> None:
        self.hide()

    @Slot(str, str)
    def _on_failed(self, message: str, kind: str) -> None:
        # a cancel was asked for: nothing to say; a failure stays visible until looked at
        if kind == "cancelled":
            self.hide()
            return
        self.label.setText("⚠ download failed")
        self.bar.hide()
        self.cancel_button.hide()
        self.setToolTip(message + "\nClick for Get models")

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        self.clicked.emit()
        if not self.downloads.active:
            self.hide()
        super().mouseReleaseEvent(event)

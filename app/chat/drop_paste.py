"""Files dropped or pasted into a chat's input become attachments; a pasted picture with no file (a
screenshot: pixels only) becomes a picture attachment. Text pastes and other events pass through.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QWidget

from app.chat.pictures import clipboard_picture
from engine.protocol import ImagePart


class DropAndPaste(QObject):
    """The event filter on the input (and its viewport) that hands dropped and pasted files over."""

    def __init__(self, attach: Callable[[Sequence[Path]], None], attach_picture: Callable[[ImagePart], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.attach, self.attach_picture = attach, attach_picture

    def watch(self, input_box: QWidget) -> None:
        input_box.installEventFilter(self)
        viewport = getattr(input_box, "viewport", None)
        if viewport is not None:
            viewport().installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove) and _local_files(event.mimeData().urls()):  # type: ignore[attr-defined]
            event.acceptProposedAction()  # type: ignore[attr-defined]
            return True
        if kind == QEvent.Type.Drop and isinstance(event, QDropEvent):
            files = _local_files(event.mimeData().urls())
            if files:
                event.acceptProposedAction()
                self.attach(files)
                return True
        if kind == QEvent.Type.KeyPress and isinstance(event, QKeyEvent) and event.matches(QKeySequence.StandardKey.Paste):
            mime = QGuiApplication.clipboard().mimeData()
            files = _local_files(mime.urls()) if mime is not None else []
            if files:
                self.attach(files)
                return True
            pasted = clipboard_picture(mime) if mime is not None and not mime.hasText() else None
            if pasted is not None:  # a screenshot: pixels, no file
                self.attach_picture(pasted)
                return True
        return super().eventFilter(watched, event)


def _local_files(urls: Sequence[QUrl]) -> list[Path]:
    return [Path(url.toLocalFile()) for url in urls if url.isLocalFile() and Path(url.toLocalFile()).is_file()]

"""One attached file's chip above the input: its name, pages, tokens and whether it goes in whole or is
searched, "reading 30%" while the worker is at it, or why it cannot be read (the whole sentence in the
tooltip). AttachmentsBar (app/chat/attachments.py) decides what each chip says.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget

from app.chat.attachment_worker import ReadFile
from app.chat.pictures import remove_button

_CHIP_CHARS = 80


class AttachmentChip(QFrame):
    remove_requested = Signal(int)

    def __init__(self, key: int, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.key, self.name = key, name
        self.read: ReadFile | None = None
        self.doc_id: int | None = None
        self.error = ""
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel(f"{name} · reading…", self)
        close = remove_button(self, name, lambda: self.remove_requested.emit(self.key))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(6, 2, 2, 2)
        layout.addWidget(self.label)
        layout.addWidget(close)

    def show_state(self, mode: str, status: str = "") -> None:
        if self.error:
            shown = self.error if len(self.error) <= _CHIP_CHARS else self.error[:_CHIP_CHARS].rsplit(" ", 1)[0] + "…"
            self.label.setText(f"⚠ {shown}")  # the whole sentence in the tooltip: the row holds several chips
            self.setToolTip(self.error)
            return
        parts = [self.name]
        if self.read is not None:
            parts += [f"{self.read.pages} page{'s' * (self.read.pages != 1)}",
                      f"{'' if self.read.exact else '≈'}{self.read.tokens:,} tokens", mode]
        if status:
            parts.append(status)
        self.label.setText(" · ".join(parts))

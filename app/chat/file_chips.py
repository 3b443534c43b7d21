"""The files a user message went with, as small chips above its text: each one's name and how it went in.

The message itself holds the files' text (whole) or excerpts (searched); the card shows the question
and these chips instead (engine/documents/prompt.py splits the stored message), in the session and
when the chat is reopened from the history.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget


class FileChips(QWidget):
    def __init__(self, files: Sequence[tuple[str, str]], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("messageFiles")
        self.files = list(files)
        self.labels: list[QLabel] = []
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 2, 0, 2)
        for name, how in self.files:
            chip = QFrame(self)
            chip.setFrameShape(QFrame.Shape.StyledPanel)
            label = QLabel(f"{name} · {how}", chip)
            label.setToolTip(f"{name} went into this message {'whole' if how == 'whole' else 'as searched excerpts'}")
            inner = QHBoxLayout(chip)
            inner.setContentsMargins(6, 1, 6, 1)
            inner.addWidget(label)
            row.addWidget(chip)
            self.labels.append(label)
        row.addStretch(1)

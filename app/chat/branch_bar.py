"""The "< 1/2 >" control under a message that has alternatives (an edited question, a regenerated answer).

It only shows where a message stands among its siblings and asks for a step to
the previous or next one; the history decides what that means (app/history/branches.py).
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QWidget


class BranchBar(QWidget):
    """"< index/count >"; hidden while the message has no alternatives."""

    step_requested = Signal(int)  # -1: the previous alternative, +1: the next

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("branchBar")
        self.index, self.count = 1, 1
        self.previous_button = self._button("<", "The previous alternative", -1)
        self.label = QLabel("1/1")
        self.label.setProperty("role", "hint")
        self.next_button = self._button(">", "The next alternative", +1)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        for widget in (self.previous_button, self.label, self.next_button):
            layout.addWidget(widget)
        self.hide()

    def _button(self, text: str, tip: str, step: int) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.clicked.connect(lambda: self.step_requested.emit(step))
        return button

    def set_position(self, index: int, count: int) -> None:
        """1-based `index` among `count` alternatives; one alternative hides the bar."""
        self.index, self.count = index, count
        self.label.setText(f"{index}/{count}")
        self.previous_button.setEnabled(index > 1)
        self.next_button.setEnabled(index < count)
        self.setVisible(count > 1)

    def text(self) -> str:
        return f"< {self.index}/{self.count} >" if self.count > 1 else ""

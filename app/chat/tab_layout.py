"""Where a chat tab's widgets sit: the model header, the messages beside the chat panel, the input, the buttons.

The tab makes its widgets and wires what they do; this module arranges them, so a change of
layout touches nothing of how a turn is sent or streamed. Also the plain widgets themselves: the
input box (Enter sends), the welcome, the reason line and the buttons.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QBoxLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)


class ChatInput(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line."""

    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatInput")  # styled in resources/style.qss
        self.setAccessibleName("Message")
        self.setTabChangesFocus(True)  # Tab leaves the box, as in every form: a keyboard user is never stuck in it
        self.setPlaceholderText("Message the model — Enter sends, Shift+Enter for a new line")
        self.setFixedHeight(self.fontMetrics().lineSpacing() * 4 + 16)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        super().keyPressEvent(event)


def welcome_label(parent: QWidget) -> QLabel:
    """What an empty chat shows until its first message (hidden until the tab gives it a text)."""
    welcome = QLabel(parent)
    welcome.setObjectName("welcome")  # styled in resources/style.qss
    welcome.setWordWrap(True)
    welcome.setContentsMargins(12, 10, 12, 10)
    welcome.hide()
    return welcome


def reason_label(parent: QWidget) -> QLabel:
    """The line beside the buttons that says why the chat cannot send (no model, a refused picture, a problem)."""
    reason = QLabel(parent)
    reason.setProperty("role", "hint")
    reason.setWordWrap(True)
    return reason


def push_button(text: str, slot: Callable[[], None], tip: str = "", accent: bool = False) -> QPushButton:
    """One of the tab's buttons (`accent`: the one styled as the main action, Send)."""
    button = QPushButton(text)
    button.clicked.connect(slot)
    if tip:
        button.setToolTip(tip)
    if accent:
        button.setProperty("accent", True)
    return button


def panel_toggle(panel: QWidget) -> QPushButton:
    """The button that shows and hides the chat panel."""
    button = QPushButton("Chat settings")
    button.setCheckable(True)
    button.setToolTip("This chat's system prompt, sampling and presets (Ctrl+Shift+P)")
    button.toggled.connect(panel.setVisible)
    return button


def header_row(widgets: Sequence[QWidget]) -> QHBoxLayout:
    header = QHBoxLayout()
    header.setContentsMargins(12, 6, 12, 0)
    for widget in widgets:
        header.addWidget(widget)
    header.addStretch(1)
    return header


def buttons_row(panel_button: QWidget, reason: QLabel, think: QWidget, buttons: Sequence[QWidget]) -> QHBoxLayout:
    row = QHBoxLayout()
    row.addWidget(panel_button)
    row.addWidget(reason, 10)
    row.addStretch(1)  # buttons keep their size when there is no reason to show
    row.addWidget(think)
    for button in buttons:
        row.addWidget(button)
    return row


def arrange_tab(tab: QWidget, header: QBoxLayout, welcome: QLabel, view: QWidget, panel: QWidget,
                bottom_widgets: Sequence[QWidget], buttons: QBoxLayout, over_view: Sequence[QWidget] = ()) -> None:
    """Lay the tab out, top to bottom; the message list takes the spare height, `over_view` (find) sits on it."""
    layout = QVBoxLayout(tab)
    layout.setContentsMargins(0, 0, 0, 6)
    layout.addLayout(header)
    welcome_row = QVBoxLayout()
    welcome_row.setContentsMargins(12, 12, 12, 0)  # aligned with the message cards
    welcome_row.addWidget(welcome)
    layout.addLayout(welcome_row)
    transcript = QVBoxLayout()
    transcript.setSpacing(0)
    for widget in over_view:
        transcript.addWidget(widget)
    transcript.addWidget(view, 1)
    middle = QHBoxLayout()
    middle.addLayout(transcript, 1)
    middle.addWidget(panel)
    layout.addLayout(middle, 1)
    bottom = QVBoxLayout()
    bottom.setContentsMargins(12, 0, 12, 0)
    for widget in bottom_widgets:
        bottom.addWidget(widget)
    bottom.addLayout(buttons)
    layout.addLayout(bottom)


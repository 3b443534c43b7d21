"""Messages written while the chat answers: queued above the input box, editable, cancellable, sent in turn.

Sending while an answer streams puts the message here, shown as a small
editable box with a ✕, and the tab sends the first one when the answer ends (then the next
after that answer, and so on). What the box holds when its turn comes is what is sent; a box
emptied by editing is dropped.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

MAX_LINES = 3  # a long queued message scrolls inside its box
WAITING_FOR_ANSWER = "sent when the answer ends"
WAITING_FOR_MODEL = "sent when the model has loaded"  # typed while the chat's model loads (a cold start)


class QueuedMessage(QFrame):
    """One queued message: its text, editable in place, and a button that cancels it."""

    cancel_requested = Signal()

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("queuedMessage")  # styled in resources/style.qss
        self.editor = QPlainTextEdit(self)
        self.editor.setPlainText(text)
        self.editor.setAccessibleName("Queued message")
        self.editor.setAccessibleDescription("Sent when the answer ends; edit it until then")
        self.editor.setToolTip("Sent when the answer ends; edit it until then")
        self.editor.setTabChangesFocus(True)
        lines = min(max(text.count("\n") + 1, 1), MAX_LINES)
        self.editor.setFixedHeight(self.editor.fontMetrics().lineSpacing() * lines + 12)
        self.cancel_button = QToolButton(self)
        self.cancel_button.setText("✕")
        self.cancel_button.setAutoRaise(True)
        self.cancel_button.setAccessibleName("Cancel queued message")
        self.cancel_button.setToolTip("Don't send this message")
        self.cancel_button.clicked.connect(self.cancel_requested)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 2, 2)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.cancel_button, 0, Qt.AlignmentFlag.AlignTop)

    def text(self) -> str:
        return self.editor.toPlainText().strip()


class MessageQueue(QWidget):
    """The queued messages of one tab, oldest first; hidden while there are none."""

    changed = Signal()  # a message was queued, cancelled or sent

    def __init__(self, can_send: Callable[[], bool], send: Callable[[str], bool], parent: QWidget | None = None) -> None:
        """`can_send`: the chat is free (not answering, a model ready); `send`: start a turn with the text, False if refused."""
        super().__init__(parent)
        self._can_send, self._send = can_send, send
        self.note = WAITING_FOR_ANSWER  # what the queue waits for
        self.setObjectName("messageQueue")
        self.title = QLabel(self)
        self.title.setProperty("role", "hint")
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 4)
        self._layout.setSpacing(2)
        self._layout.addWidget(self.title)
        self._update()

    def items(self) -> list[QueuedMessage]:
        widgets = [item.widget() for i in range(self._layout.count()) if (item := self._layout.itemAt(i))]
        return [widget for widget in widgets if isinstance(widget, QueuedMessage)]

    def texts(self) -> list[str]:
        return [item.text() for item in self.items()]

    def add(self, text: str) -> QueuedMessage:
        item = QueuedMessage(text, self)
        item.cancel_requested.connect(lambda: self.cancel(item))
        self._layout.addWidget(item)
        self._update()
        return item

    def cancel(self, item: QueuedMessage) -> None:
        self._layout.removeWidget(item)
        item.hide()
        item.deleteLater()
        self._update()

    def next_item(self) -> QueuedMessage | None:
        """The oldest queued message with text (emptied ones are dropped on the way); it stays queued."""
        for item in self.items():
            if item.text():
                return item
            self.cancel(item)
        return None

    def send_soon(self) -> None:
        """Send the next queued message once the event being handled (an answer's end) is over: a turn
        never starts inside the last one's end."""
        if self.items():
            QTimer.singleShot(0, self, self._send_next)

    def _send_next(self) -> None:
        item = self.next_item() if self._can_send() else None
        if item is not None and self._send(item.text()):
            self.cancel(item)

    def set_note(self, note: str) -> None:
        if note != self.note:
            self.note = note
            self._update()

    def clear(self) -> None:
        for item in self.items():
            self.cancel(item)

    def _update(self) -> None:
        count = len(self.items())
        self.title.setText(f"Queued ({count}) — {self.note}" if count > 1 else f"Queued — {self.note}")
        self.setVisible(count > 0)
        self.changed.emit()

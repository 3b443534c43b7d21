"""The conversation view of one tab: a scrolling list of message cards.

Each card is a header (who, a Copy button), a MessageBrowser with the Markdown,
and a footer line for an answer's numbers. The list stays pinned to the bottom
while text streams in, unless the user has scrolled up to read.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.markdown_view import MessageBrowser

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System", "error": "Error"}
PIN_SLACK_PX = 8  # "at the bottom" tolerates a few pixels of rounding


class MessageCard(QFrame):
    """One message: header with a copy button, the rendered text, an optional footer."""

    copied = Signal(str)  # what went to the clipboard

    def __init__(self, role: str, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self.setObjectName(f"{role}Message")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        self.title = QLabel(ROLE_TITLES.get(role, role))
        self.title.setObjectName("messageRole")
        self.copy_button = QToolButton()
        self.copy_button.setText("Copy")
        self.copy_button.setToolTip("Copy this message as Markdown")
        self.copy_button.setAutoRaise(True)
        self.copy_button.clicked.connect(self.copy_text)
        self.browser = MessageBrowser(self)
        self.browser.code_copy_requested.connect(self.copy_code)
        self.footer = QLabel()
        self.footer.setProperty("role", "hint")
        self.footer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.footer.hide()
        self._build_layout()
        self.set_text(text)

    def _build_layout(self) -> None:
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title)
        header.addStretch(1)
        header.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.browser)
        layout.addWidget(self.footer)

    def set_text(self, text: str) -> None:
        self.browser.set_markdown(text)

    def text(self) -> str:
        return self.browser.markdown_text()

    def set_footer(self, text: str) -> None:
        self.footer.setText(text)
        self.footer.setVisible(bool(text))

    def copy_text(self) -> None:
        self._to_clipboard(self.text())

    def copy_code(self, index: int) -> None:
        if 0 <= index < len(self.browser.code_blocks):
            self._to_clipboard(self.browser.code_blocks[index])

    def _to_clipboard(self, text: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(text)


class MessageList(QScrollArea):
    """Message cards stacked top to bottom; follows new text while pinned to the bottom."""

    copied = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        content = QWidget()
        content.setObjectName("messageListContent")
        self._layout = QVBoxLayout(content)
        self._layout.setContentsMargins(12, 12, 12, 12)
        self._layout.setSpacing(10)
        self._layout.addStretch(1)  # keeps cards at the top while the chat is short
        self.setWidget(content)
        self.pinned = True
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    def cards(self) -> list[MessageCard]:
        widgets = [item.widget() for i in range(self._layout.count()) if (item := self._layout.itemAt(i))]
        return [widget for widget in widgets if isinstance(widget, MessageCard)]

    def add_card(self, role: str, text: str = "") -> MessageCard:
        card = MessageCard(role, text)
        card.copied.connect(self.copied)
        self._layout.insertWidget(self._layout.count() - 1, card)
        return card

    def remove_card(self, card: MessageCard) -> None:
        self._layout.removeWidget(card)
        card.deleteLater()

    def clear(self) -> None:
        for card in self.cards():
            self.remove_card(card)

    def scroll_to_bottom(self) -> None:
        self.pinned = True
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _on_scrolled(self, value: int) -> None:
        self.pinned = value >= self.verticalScrollBar().maximum() - PIN_SLACK_PX

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self.pinned:
            self.verticalScrollBar().setValue(maximum)

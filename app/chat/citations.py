"""Citations in answers: an "[n]" that names an excerpt of the question is a link; a click shows that excerpt.

A question sent with searched documents carries its excerpts, numbered, with file and page
(engine/documents/prompt.py); they are read back from the message itself, so a chat reopened from
the history cites as it did when it was written. The answer's "[n]" for a number the question has
becomes a link (app/chat/markdown_view.py); a click opens a small window with the chunk, its file
and its page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count

from PySide6.QtCore import QObject
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.chat.message_list import MessageCard, MessageList
from engine.documents.prompt import read_excerpts
from engine.protocol import ChatMessage


class CitationWindow(QDialog):
    """One excerpt: its number, file and page above the chunk's text."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Source")
        self.heading = QLabel(self)
        self.heading.setObjectName("messageRole")
        self.heading.setWordWrap(True)
        self.body = QPlainTextEdit(self)
        self.body.setReadOnly(True)
        self.body.setAccessibleName("Excerpt")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.body, 1)
        layout.addWidget(buttons)
        self.resize(560, 360)

    def show_excerpt(self, number: int, label: str, text: str) -> None:
        self.setWindowTitle(f"Source [{number}]")
        self.heading.setText(f"[{number}] {label}")
        self.body.setPlainText(text)
        self.show()
        self.activateWindow()  # brought forward when it was open already


class Citations(QObject):
    """A tab's answers and the excerpts their questions carried."""

    def __init__(self, messages: Callable[[], Sequence[ChatMessage]], view: MessageList, parent: QWidget) -> None:
        super().__init__(parent)
        self._messages, self._view, self._parent = messages, view, parent
        self.window: CitationWindow | None = None
        view.citation_clicked.connect(self._on_clicked)
        view.earlier_shown.connect(self.refresh)

    def excerpts_before(self, index: int) -> dict[int, tuple[str, str]]:
        """The excerpts of the last user message before messages[index] (an answer streaming: index = len)."""
        messages = self._messages()
        for message in reversed(messages[:index]):
            if message.role == "user":
                return read_excerpts(message.content)
        return {}

    def refresh(self) -> None:
        """Each answer card links the numbers its question's excerpts have (a chat shown, earlier cards made)."""
        for card, index in zip(self._view.message_cards(), count(self._view.hidden_count())):
            if card.role == "assistant":
                self.link(card, index)

    def link(self, card: MessageCard, index: int) -> None:
        """The answer card of messages[index] (len(messages): the one streaming now)."""
        card.browser.set_citations(self.excerpts_before(index).keys())

    def _index_of(self, card: MessageCard) -> int:
        cards = self._view.message_cards()
        return cards.index(card) + self._view.hidden_count() if card in cards else -1

    def _on_clicked(self, card: MessageCard, number: int) -> None:
        index = self._index_of(card)
        excerpt = self.excerpts_before(index).get(number) if index >= 0 else None
        if excerpt is None:
            return
        if self.window is None:
            self.window = CitationWindow(self._parent)
        self.window.show_excerpt(number, *excerpt)

"""Citations in answers: an "[n]" that names an excerpt of the question is a link; a click shows that excerpt.

A question sent with searched documents carries its excerpts, numbered, with file and page
(engine/documents/prompt.py); they are read back from the message itself, so a chat reopened from
the history cites as it did when it was written. The answer's "[n]" for a number the question has
becomes a link (app/chat/markdown_view.py); a click opens a small window with the chunk, its file
and its page. A research answer (app/chat/research.py) cites the pages its turn read, numbered in the
order they were read (engine/tools/research_plan.py); its window shows the text the model read of the
page, with a button that opens the page itself in the browser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import count, islice

from PySide6.QtCore import QObject, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.chat.message_list import MessageCard, MessageList
from engine.documents.prompt import read_excerpts
from engine.protocol import ChatMessage
from engine.tools.research_plan import page_texts, pages_read

Excerpt = tuple[str, str, str]  # label (file and page, or title and address), text, the page's address or ""


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
        self.url = ""
        self.open_button = QPushButton("Open page", self)
        self.open_button.setToolTip("Open this page in your web browser")
        self.open_button.clicked.connect(lambda: QDesktopServices.openUrl(QUrl(self.url)))
        buttons.addButton(self.open_button, QDialogButtonBox.ButtonRole.ActionRole)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.body, 1)
        layout.addWidget(buttons)
        self.resize(560, 360)

    def show_excerpt(self, number: int, label: str, text: str, url: str = "") -> None:
        self.setWindowTitle(f"Source [{number}]")
        self.heading.setText(f"[{number}] {label}")
        self.body.setPlainText(text)
        self.url = url
        self.open_button.setVisible(bool(url))
        self.show()
        self.activateWindow()  # brought forward when it was open already


class Citations(QObject):
    """A tab's answers and the excerpts their questions carried."""

    def __init__(self, messages: Callable[[], Sequence[ChatMessage]], view: MessageList, parent: QWidget) -> None:
        super().__init__(parent)
        self._messages, self._view, self._parent = messages, view, parent
        self.window: CitationWindow | None = None
        view.citation_clicked.connect(self._on_clicked)
        view.earlier_shown.connect(self.refresh)  # the cards just made, the first ones

    def excerpts_before(self, index: int) -> dict[int, Excerpt]:
        """What messages[index] may cite (an answer streaming: index = len): the excerpts of the last user
        message before it, or else the pages read since that message."""
        messages = self._messages()
        for at in range(min(index, len(messages)) - 1, -1, -1):
            if messages[at].role == "user":
                excerpts = read_excerpts(messages[at].content)
                if excerpts:
                    return {number: (label, text, "") for number, (label, text) in excerpts.items()}
                turn = messages[at + 1:index]
                texts = page_texts(turn)
                return {page.number: (f"{page.title} — {page.url}" if page.title else page.url,
                                      texts.get(page.number, ""), page.url) for page in pages_read(turn)}
        return {}

    def refresh(self, first: int | None = None) -> None:
        """Each answer card links the numbers its question's excerpts have (a chat shown: every card; earlier
        cards made: the `first` cards, those new ones)."""
        for card, index in islice(zip(self._view.message_cards(), count(self._view.hidden_count())), first):
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

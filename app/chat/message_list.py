"""The conversation view of one tab: a scrolling list of message cards.

Each card is a header (who, "< 1/2 >" among its alternatives, Edit, Delete,
Copy), an answer's folded Thinking block (app/chat/thinking_block.py), a
MessageView with the Markdown (text pieces and code blocks), and a footer line
for an answer's numbers. The list stays pinned to the bottom while text streams
in, unless the user has scrolled up to read; a restored chat goes back to where
it was read. A long chat opens with only its last messages as cards: the earlier
ones become cards when the reader scrolls to the top (or presses "Show earlier
messages"), so opening a chat of hundreds of messages costs what a few dozen do.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.chat.branch_bar import BranchBar
from app.chat.file_chips import FileChips
from app.chat.message_view import MessageView
from app.chat.pictures import Thumbnails
from app.chat.thinking_block import ThinkingBlock
from engine.documents.prompt import split_message
from engine.protocol import ImagePart

ROLE_TITLES = {"user": "You", "assistant": "Assistant", "system": "System", "error": "Error", "tool": "Tool result"}
PIN_SLACK_PX = 8  # "at the bottom" tolerates a few pixels of rounding
SHOWN_AT_ONCE = 12  # cards a long chat opens with, and how many more each step up adds
Entry = tuple[str, str, str, tuple[ImagePart, ...]]  # a message not shown yet: role, text, thinking, pictures


class MessageCard(QFrame):
    """One message: header with a copy button, the rendered text, an optional footer."""

    copied = Signal(str)  # what went to the clipboard
    citation_clicked = Signal(int)
    edit_requested = Signal()
    delete_requested = Signal()

    def __init__(self, role: str, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.role = role
        self.setObjectName(f"{role}Message")
        self.setAccessibleName(f"{ROLE_TITLES.get(role, role)} message")  # a screen reader says whose it is
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        self.title = QLabel(ROLE_TITLES.get(role, role))
        self.title.setObjectName("messageRole")
        self.copy_button = QToolButton()
        self.copy_button.setText("Copy")
        self.copy_button.setToolTip("Copy the answer as Markdown (without its thinking)" if role == "assistant"
                                    else "Copy this message as Markdown")
        self.copy_button.setAccessibleName("Copy message")
        self.copy_button.setAutoRaise(True)
        self.copy_button.clicked.connect(self.copy_text)
        self.branch_bar = BranchBar(self)
        self.edit_button = self._tool_button("Edit", "Edit this message and send it as a new branch", self.edit_requested)
        self.delete_button = self._tool_button("Delete", "Delete this message and everything below it", self.delete_requested)
        self.thinking_block = ThinkingBlock(self)
        self.pictures: Thumbnails | None = None  # a user message's pictures, above its text
        self.files: FileChips | None = None  # ... and the files it went with
        self.browser = MessageView(self)  # text pieces and code blocks
        self.browser.copied.connect(self.copied)
        self.browser.citation_clicked.connect(self.citation_clicked)
        self.footer = QLabel()
        self.footer.setProperty("role", "hint")
        self.footer.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.footer.hide()
        self._build_layout()
        # Only now: showing a widget that has no parent yet would open it as a window of its own.
        self.edit_button.setVisible(role == "user")
        self.delete_button.setVisible(role in ("user", "assistant"))
        self.set_text(text)

    def _build_layout(self) -> None:
        header = QHBoxLayout()
        header.setContentsMargins(0, 0, 0, 0)
        header.addWidget(self.title)
        header.addStretch(1)
        for widget in (self.branch_bar, self.edit_button, self.delete_button, self.copy_button):
            header.addWidget(widget)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.setSpacing(2)
        layout.addLayout(header)
        layout.addWidget(self.thinking_block)
        layout.addWidget(self.browser)
        layout.addWidget(self.footer)

    def _tool_button(self, text: str, tip: str, signal: SignalInstance) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.clicked.connect(signal)
        return button

    def set_text(self, text: str) -> None:
        self.browser.set_markdown(text)

    def text(self) -> str:
        return self.browser.markdown_text()

    def set_thinking(self, text: str) -> None:
        """A reasoning model's thinking, folded under its "Thinking" header; never mixed into the answer."""
        self.thinking_block.set_text(text)

    def set_pictures(self, images: tuple[ImagePart, ...]) -> None:
        if images and self.pictures is None:
            self.pictures = Thumbnails(images, self)
            layout = self.layout()
            assert isinstance(layout, QVBoxLayout)
            layout.insertWidget(layout.indexOf(self.browser), self.pictures)

    def set_files(self, files: list[tuple[str, str]]) -> None:
        if files and self.files is None:
            self.files = FileChips(files, self)
            layout = self.layout()
            assert isinstance(layout, QVBoxLayout)
            layout.insertWidget(layout.indexOf(self.browser), self.files)

    def add_part(self, widget: QWidget) -> None:
        """A part below the text, above the footer (an answer's tool calls: app/chat/tool_card.py)."""
        layout = self.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(layout.indexOf(self.footer), widget)

    def set_footer(self, text: str) -> None:
        self.footer.setText(text)
        self.footer.setVisible(bool(text))

    def copy_text(self) -> None:
        self._to_clipboard(self.text())

    def copy_code(self, index: int) -> None:
        blocks = self.browser.code_block_widgets()
        if 0 <= index < len(blocks):
            blocks[index].copy()

    def _to_clipboard(self, text: str) -> None:
        QGuiApplication.clipboard().setText(text)
        self.copied.emit(text)


class MessageList(QScrollArea):
    """Message cards stacked top to bottom; follows new text while pinned to the bottom."""

    copied = Signal(str)
    # The card whose button was pressed: the tab maps it to its message.
    edit_requested = Signal(object)
    delete_requested = Signal(object)
    branch_step_requested = Signal(object, int)
    citation_clicked = Signal(object, int)  # the card, the excerpt's number
    earlier_shown = Signal()  # more of the earlier messages became cards (their "< 1/2 >" needs drawing)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._restore_target: float | None = None  # fraction from the bottom, until the user scrolls
        self._restoring = False
        self._earlier: list[Entry] = []  # the first messages, not cards yet
        self._anchor: tuple[MessageCard, int] | None = None  # after showing earlier cards: (card read, its y - scroll)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        content = QWidget()
        content.setObjectName("messageListContent")
        self._layout = QVBoxLayout(content)
        self._layout.setContentsMargins(12, 12, 12, 12)
        self._layout.setSpacing(10)
        self.earlier_button = QPushButton(content)
        self.earlier_button.clicked.connect(lambda: self.show_earlier())
        self.earlier_button.hide()
        self._layout.addWidget(self.earlier_button, 0, Qt.AlignmentFlag.AlignHCenter)
        self._layout.addStretch(1)  # keeps cards at the top while the chat is short
        self.setWidget(content)
        self.pinned = True
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    def cards(self) -> list[MessageCard]:
        widgets = [item.widget() for i in range(self._layout.count()) if (item := self._layout.itemAt(i))]
        return [widget for widget in widgets if isinstance(widget, MessageCard)]

    def add_card(self, role: str, text: str = "", card: MessageCard | None = None,
                 position: int | None = None) -> MessageCard:
        """A new card at the bottom (or at `position`): a plain one for `role`, or the `card` given (a tool result)."""
        card = card or MessageCard(role, text)
        card.copied.connect(self.copied)
        card.edit_requested.connect(lambda: self.edit_requested.emit(card))
        card.delete_requested.connect(lambda: self.delete_requested.emit(card))
        card.branch_bar.step_requested.connect(lambda step: self.branch_step_requested.emit(card, step))
        card.citation_clicked.connect(lambda number: self.citation_clicked.emit(card, number))
        self._layout.insertWidget(self._layout.count() - 1 if position is None else position, card)
        return card

    def set_messages(self, messages: list[Entry]) -> None:
        """Replace every card: (role, text, thinking, pictures) of a whole conversation; only the last ones become cards now."""
        self.clear()
        self._earlier = messages[:-SHOWN_AT_ONCE] if len(messages) > SHOWN_AT_ONCE else []
        for entry in messages[len(self._earlier):]:
            self._add_entry(entry)
        self._update_earlier_button()

    def _add_entry(self, entry: Entry, position: int | None = None) -> None:
        role, text, thinking, images = entry
        card = self.add_message_card(role, text, position)
        card.set_thinking(thinking)
        card.set_pictures(images)

    def add_message_card(self, role: str, content: str, position: int | None = None) -> MessageCard:
        """A message's card; a user message with files shows its question and the files as chips."""
        question, files = split_message(content) if role == "user" else (content, [])
        card = self.add_card(role, question, position=position)
        card.set_files(files)
        return card

    def hidden_count(self) -> int:
        """Messages before the first card (each comes before every card's message)."""
        return len(self._earlier)

    def show_earlier(self, count: int = SHOWN_AT_ONCE) -> None:
        """Turn the last `count` earlier messages into cards, above the others; the reader stays put."""
        if not self._earlier:
            return
        count = min(count, len(self._earlier))
        batch, self._earlier = self._earlier[-count:], self._earlier[:-count]
        cards = self.cards()
        if cards:
            self._anchor = (cards[0], cards[0].y() - self.verticalScrollBar().value())
        for offset, entry in enumerate(batch):
            self._add_entry(entry, position=1 + offset)  # after the button
        self._update_earlier_button()
        self.earlier_shown.emit()

    def show_all(self) -> None:
        self.show_earlier(len(self._earlier))

    def _update_earlier_button(self) -> None:
        self.earlier_button.setText(f"Show earlier messages ({len(self._earlier)})")
        self.earlier_button.setVisible(bool(self._earlier))

    def remove_card(self, card: MessageCard) -> None:
        self._layout.removeWidget(card)
        card.deleteLater()

    def clear(self) -> None:
        self._earlier = []
        self._update_earlier_button()
        for card in self.cards():
            self.remove_card(card)

    def message_cards(self) -> list[MessageCard]:
        """The cards of the conversation itself (no error notes), top to bottom."""
        return [card for card in self.cards() if card.role in ("user", "assistant", "tool")]

    def remove_from(self, card: MessageCard) -> None:
        """Remove this card and every card below it."""
        cards = self.cards()
        for doomed in cards[cards.index(card):] if card in cards else []:
            self.remove_card(doomed)

    def scroll_to_bottom(self) -> None:
        self.pinned = True
        self._restore_target = None
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def scroll_from_bottom(self) -> float:
        """Where the reader is, as a fraction of the scroll range above the bottom: 0.0 at the bottom, 1.0 at the top."""
        if self._restore_target is not None:
            return self._restore_target  # not laid out yet (a hidden tab): still where it was
        bar = self.verticalScrollBar()
        return 0.0 if bar.maximum() <= 0 else (bar.maximum() - bar.value()) / bar.maximum()

    def restore_scroll(self, from_bottom: float) -> None:
        """Go back to a stored `scroll_from_bottom()`; applied again as the cards lay out, until the user scrolls."""
        from_bottom = min(max(from_bottom, 0.0), 1.0)
        if from_bottom <= 0.0:
            self.scroll_to_bottom()
            return
        self._restore_target = from_bottom
        self.pinned = False
        self._apply_restore()

    def _apply_restore(self) -> None:
        bar = self.verticalScrollBar()
        if self._restore_target is not None and bar.maximum() > 0:
            self._restoring = True
            try:
                bar.setValue(round(bar.maximum() * (1.0 - self._restore_target)))
            finally:
                self._restoring = False
            self.pinned = False

    def _on_scrolled(self, value: int) -> None:
        if self._restoring:
            return
        # Qt re-bounds the value only after rangeChanged, where the restore has already
        # set it in range: any other move is the reader's, who now decides where to be.
        self._restore_target = self._anchor = None
        self.pinned = value >= self.verticalScrollBar().maximum() - PIN_SLACK_PX
        if value == 0 and self._earlier:
            self.show_earlier()  # the reader reached the top: the messages before it

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._anchor is not None:  # the earlier cards lay out: stay by the card being read
            card, offset = self._anchor
            self._restoring = True
            try:
                self.verticalScrollBar().setValue(card.y() - offset)
            finally:
                self._restoring = False
        elif self._restore_target is not None:
            self._apply_restore()
        elif self.pinned:
            self.verticalScrollBar().setValue(maximum)

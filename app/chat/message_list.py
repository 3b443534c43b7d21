"""The conversation view of one tab: a scrolling list of message cards (app/chat/message_card.py).

The list stays pinned to the bottom while text streams
in, unless the user has scrolled up to read; a restored chat goes back to where
it was read. A long chat opens with only its last messages as cards: the earlier
ones become cards when the reader scrolls to the top (or presses "Show earlier
messages"), so opening a chat of hundreds of messages costs what a few dozen do.
Scrolling to the top makes them one card per event-loop turn, so a frame waits
for one card's layout, never a dozen's. Of the cards made, only those near the view are laid out
(app/chat/transcript_window.py): the others wait hidden behind spacers of their height, so a chat
scrolled through thousands of messages lays out a few dozen cards, never thousands. Where the
reader is kept as cards come, go and change height is app/chat/reader_place.py's.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.chat.message_card import ROLE_TITLES, MessageCard
from app.chat.message_view import prerender
from app.chat.reader_place import ReaderPlace
from app.chat.transcript_window import CardWindow
from app.misc.accessibility import set_role
from engine.documents.prompt import split_message
from engine.protocol import Dictation, ImagePart

SHOWN_AT_ONCE = 12  # cards a long chat opens with, and how many more each step up adds
# A message not shown yet: role, text, thinking, pictures and, where it was spoken, its Dictation (may be left out)
Entry = tuple[str, str, str, tuple[ImagePart, ...]] | tuple[str, str, str, tuple[ImagePart, ...], Dictation | None]
__all__ = ["ROLE_TITLES", "SHOWN_AT_ONCE", "Entry", "MessageCard", "MessageList"]  # the card's home is message_card.py


def _lay_out_now() -> None:
    """Run the layouts that are waiting (they normally run once the event at hand is over)."""
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)


class MessageList(QScrollArea):
    """Message cards stacked top to bottom; follows new text while pinned to the bottom."""

    copied = Signal(str)
    # The card whose button was pressed: the tab maps it to its message.
    edit_requested = Signal(object)
    delete_requested = Signal(object)
    read_aloud_requested = Signal(object)  # the card
    branch_step_requested = Signal(object, int)
    citation_clicked = Signal(object, int)  # the card, the excerpt's number
    earlier_shown = Signal(int)  # this many earlier messages became cards, the first ones (their "< 1/2 >" needs drawing)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._earlier: list[Entry] = []  # the first messages, not cards yet
        self._trickle_left = 0  # earlier cards still to make, one per event-loop turn, after the reader reached the top
        self._render_next = False  # the trickle's next turn renders the next card's Markdown, the one after makes it
        self._cards: list[MessageCard] = []  # top to bottom, laid out or not
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setAccessibleName("Conversation")
        content = QWidget()
        content.setObjectName("messageListContent")
        content.setAccessibleName("Messages")  # a list of message list items, for a screen reader
        set_role(content, QAccessible.Role.List)
        self._layout = QVBoxLayout(content)
        self._layout.setContentsMargins(12, 12, 12, 12)
        self._layout.setSpacing(10)
        self.earlier_button = QPushButton(content)
        self.earlier_button.setAccessibleName("Show earlier messages")
        self.earlier_button.clicked.connect(lambda: self.show_earlier())
        self.earlier_button.hide()
        self._layout.addWidget(self.earlier_button, 0, Qt.AlignmentFlag.AlignHCenter)
        # Which cards are laid out; when heights change, the reader's card stays where it was.
        # folded cards (a research answer's steps) stay hidden and out of the window until unfolded
        self._folded: set[QWidget] = set()
        self.window_ = CardWindow(self._layout, self._unfolded_cards, lambda: self.reader_place.place(follow_reader=True),
                                  content)
        self.window_.focus_home = self
        self._layout.addWidget(self.window_.top)  # the cards above the laid-out ones ...
        self._layout.addWidget(self.window_.bottom)  # ... and those below; the cards go in between
        self._layout.addStretch(1)  # keeps cards at the top while the chat is short
        self.setWidget(content)
        bar = self.verticalScrollBar()
        self.reader_place = ReaderPlace(bar, self.window_, lambda card: card in self._cards, lambda: self.viewport().height())
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    def cards(self) -> list[MessageCard]:
        """Every card made, top to bottom, whether laid out now or waiting outside the view."""
        return list(self._cards)

    def laid_out_cards(self) -> list[MessageCard]:
        """The cards laid out now (near the view), top to bottom."""
        return [card for card in self._cards if self.window_.is_laid_out(card)]

    def add_card(self, role: str, text: str = "", card: MessageCard | None = None,
                 position: int | None = None) -> MessageCard:
        """A new card at the bottom (or at `position`): a plain one for `role`, or the `card` given (a tool result)."""
        card = card or MessageCard(role, text)
        card.copied.connect(self.copied)
        card.edit_requested.connect(lambda: self.edit_requested.emit(card))
        card.delete_requested.connect(lambda: self.delete_requested.emit(card))
        card.read_aloud_requested.connect(lambda: self.read_aloud_requested.emit(card))
        card.branch_bar.step_requested.connect(lambda step: self.branch_step_requested.emit(card, step))
        card.citation_clicked.connect(lambda number: self.citation_clicked.emit(card, number))
        index = len(self._cards) if position is None else position
        self._cards.insert(index, card)
        self._layout.insertWidget(self._layout.indexOf(self.window_.top) + 1 + index, card)
        self.window_.watch(card)  # laid out, if near the view, once the event at hand is over (as Qt shows a new widget)
        return card

    def set_messages(self, messages: list[Entry]) -> None:
        """Replace every card: (role, text, thinking, pictures[, dictation]) of a whole conversation; only the last ones become cards now."""
        self.clear()
        self._earlier = messages[:-SHOWN_AT_ONCE] if len(messages) > SHOWN_AT_ONCE else []
        for entry in messages[len(self._earlier):]:
            self._add_entry(entry)
        self._update_earlier_button()

    def _add_entry(self, entry: Entry, position: int | None = None) -> None:
        role, text, thinking, images = entry[:4]
        card = self.add_message_card(role, text, position, entry[4] if len(entry) == 5 else None)
        card.set_thinking(thinking)
        card.set_pictures(images)

    def add_message_card(self, role: str, content: str, position: int | None = None,
                         dictation: Dictation | None = None) -> MessageCard:
        """A message's card; a user message with files shows its question and the files as chips, a spoken
        one a mark that it was dictated."""
        question, files = split_message(content) if role == "user" else (content, [])
        card = self.add_card(role, question, position=position)
        card.set_files(files)
        card.set_dictation(dictation, question)
        return card

    def hidden_count(self) -> int:
        """Messages before the first card (each comes before every card's message)."""
        return len(self._earlier)

    def hidden_contain(self, text: str, match_case: bool = False) -> bool:
        """Whether a message before the first card holds `text` (find in chat shows them then)."""
        if not match_case:
            text = text.casefold()
        return any(text in (entry[1] if match_case else entry[1].casefold()) for entry in self._earlier)

    def show_earlier(self, count: int = SHOWN_AT_ONCE) -> None:
        """Turn the last `count` earlier messages into cards, above the others; the reader stays put."""
        if not self._earlier:
            return
        count = min(count, len(self._earlier))
        batch, self._earlier = self._earlier[-count:], self._earlier[:-count]
        self.reader_place.keep_reading()
        for offset, entry in enumerate(batch):
            self._add_entry(entry, position=offset)
        self._update_earlier_button()
        self.earlier_shown.emit(count)

    def show_all(self) -> None:
        self.show_earlier(len(self._earlier))

    def _update_earlier_button(self) -> None:
        self.earlier_button.setText(f"Show earlier messages ({len(self._earlier)})")
        self.earlier_button.setVisible(bool(self._earlier))

    def reveal(self, card: MessageCard) -> None:
        """Lay the card out now, with the cards around it, and scroll so that its top is in view."""
        if card not in self._cards:
            return
        if not self.window_.is_laid_out(card):
            self.reader_place.place()  # the spacers of the cards as they are now (some may just have been made) ...
            _lay_out_now()  # ... and the scroll range they make
            self.reader_place.jump_to(max(0, self.window_.top_of(card) - self._layout.spacing()))  # the window moves there
            self.reader_place.place(keep=card)
            _lay_out_now()  # its true place, before the caller scrolls to it
        self.ensureWidgetVisible(card, 0, 0)

    def top_of(self, card: MessageCard) -> int:
        """Where the card's top is in the content, laid out or not."""
        return card.y() if self.window_.is_laid_out(card) else self.window_.top_of(card)

    def remove_card(self, card: MessageCard) -> None:
        if card in self._cards:
            self._cards.remove(card)
        self._drop(card)

    def _drop(self, card: MessageCard) -> None:
        self._folded.discard(card)
        self.window_.forget(card)
        self._layout.removeWidget(card)
        card.hide()
        card.deleteLater()

    def clear(self) -> None:
        self._earlier, self._trickle_left = [], 0
        self._update_earlier_button()
        cards, self._cards = self._cards, []
        for card in cards:
            self._drop(card)

    def message_cards(self) -> list[MessageCard]:
        """The cards of the conversation itself (no error notes), top to bottom."""
        return [card for card in self.cards() if card.role in ("user", "assistant", "tool")]

    def remove_from(self, card: MessageCard) -> None:
        """Remove this card and every card below it."""
        cards = self.cards()
        for doomed in cards[cards.index(card):] if card in cards else []:
            self.remove_card(doomed)

    @property
    def pinned(self) -> bool:
        """The view follows new text at the bottom (the reader has not scrolled up)."""
        return self.reader_place.pinned

    def scroll_to_bottom(self) -> None:
        self.reader_place.to_bottom()

    def scroll_from_bottom(self) -> float:
        """Where the reader is: 0.0 at the bottom, 1.0 at the top (reader_place.py)."""
        return self.reader_place.from_bottom()

    def restore_scroll(self, from_bottom: float) -> None:
        """Go back to a stored `scroll_from_bottom()`, until the user scrolls."""
        self.reader_place.restore(from_bottom)

    def fold(self, cards: Sequence[QWidget], folded: bool) -> None:
        """Hide `cards` (folded) or give them back to the window, which lays them out where they are near the view."""
        for card in cards:
            if folded:
                self._folded.add(card)
                card.setVisible(False)
            else:
                self._folded.discard(card)
        self.reader_place.place(follow_reader=True)

    def _unfolded_cards(self) -> list[MessageCard]:
        """The cards the window places (asked on every scroll: no pass over them while none is folded)."""
        return [card for card in self._cards if card not in self._folded] if self._folded else self._cards

    def resizeEvent(self, event) -> None:  # type: ignore[no-untyped-def]
        super().resizeEvent(event)
        self.window_.place_soon()

    def _on_scrolled(self, value: int) -> None:
        moved = self.reader_place.on_scrolled(value)
        if moved and value == 0 and self._earlier and not self._trickle_left:
            self._trickle_left, self._render_next = SHOWN_AT_ONCE, False  # the reader reached the top: the messages before it
            self._on_trickle()

    def _on_trickle(self) -> None:
        if self._trickle_left <= 0 or not self._earlier:
            self._trickle_left, self._render_next = 0, False
            return
        if self._render_next:  # a card's Markdown on one turn, its widgets on the next: no frame waits for both
            role, text = self._earlier[-1][:2]
            prerender(split_message(text)[0] if role == "user" else text)
        else:
            self._trickle_left -= 1
            self.show_earlier(1)
        self._render_next = not self._render_next and bool(self._earlier)
        QTimer.singleShot(0, self, self._on_trickle)  # tied to the view: never runs after it is gone

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        self.reader_place.on_range_changed(maximum)

"""Where the reader of a transcript is kept: at the bottom while text streams in, back where a restored
chat was read, or by the card being read while cards above it are made or change height.

Separate from MessageList (message_list.py), which makes, orders and removes the cards, because this
changes with how scrolling should feel: when the view follows new text, which moves of the scroll
bar are the reader's own, and how a position survives cards laid out late (transcript_window.py).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QScrollBar, QWidget

from app.chat.transcript_window import CardWindow

PIN_SLACK_PX = 8  # "at the bottom" tolerates a few pixels of rounding


class ReaderPlace:
    """The scroll position's owner: `pinned` to the bottom, a `restore_target`, or an `anchor` card."""

    def __init__(self, bar: QScrollBar, window: CardWindow, has_card: Callable[[QWidget], bool],
                 view_height: Callable[[], int]) -> None:
        self.bar, self.window = bar, window
        self._has_card, self._view_height = has_card, view_height
        self.pinned = True
        self.restore_target: float | None = None  # fraction from the bottom, until the user scrolls
        self.anchor: tuple[QWidget, int] | None = None  # after showing earlier cards: (card read, its y - scroll)
        self._moving = False  # the bar is being moved here, not by the reader

    def _move_bar(self, value: int) -> None:
        """Move the bar as the view's own doing: the reader's wishes (pinned or not) stay as they were."""
        self._moving = True
        try:
            self.bar.setValue(value)
        finally:
            self._moving = False

    def to_bottom(self) -> None:
        self.pinned = True
        self.restore_target = None
        self.bar.setValue(self.bar.maximum())

    def jump_to(self, value: int) -> None:
        """Go to `value` as if the reader had scrolled there (a card revealed)."""
        self.pinned, self.anchor = False, None
        self.bar.setValue(value)

    def keep_reading(self) -> None:
        """Cards are about to be made above: keep the card read now where it is on the screen."""
        self.anchor = self.window.anchor_at(self.bar.value())

    def from_bottom(self) -> float:
        """Where the reader is, as a fraction of the scroll range above the bottom: 0.0 at the bottom, 1.0 at the top."""
        if self.restore_target is not None:
            return self.restore_target  # not laid out yet (a hidden tab): still where it was
        return 0.0 if self.bar.maximum() <= 0 else (self.bar.maximum() - self.bar.value()) / self.bar.maximum()

    def restore(self, from_bottom: float) -> None:
        """Go back to a stored `from_bottom()`; applied again as the cards lay out, until the user scrolls."""
        from_bottom = min(max(from_bottom, 0.0), 1.0)
        if from_bottom <= 0.0:
            self.to_bottom()
            return
        self.restore_target = from_bottom
        self.pinned = False
        self._apply_restore()

    def _apply_restore(self) -> None:
        if self.restore_target is not None and self.bar.maximum() > 0:
            self._move_bar(round(self.bar.maximum() * (1.0 - self.restore_target)))
            self.pinned = False

    def place(self, keep: QWidget | None = None, follow_reader: bool = False) -> None:
        """Lay out the cards near the view; `follow_reader`: first scroll so the card read stays put (heights changed)."""
        value = self.bar.value()
        reader = self.window.reader
        if self.anchor is not None and self._has_card(self.anchor[0]):  # earlier cards just made: where the reader will be
            card, offset = self.anchor
            value, keep = self.window.top_of(card) - offset, keep or card
        elif follow_reader and not self.pinned and self.restore_target is None and reader is not None \
                and self._has_card(reader[0]):
            value = self.window.top_of(reader[0]) + reader[1]
            if value != self.bar.value() and self.bar.minimum() <= value <= self.bar.maximum():
                self._move_bar(value)
        self.window.place(value, self._view_height(), self.pinned and self.anchor is None, keep)

    def on_scrolled(self, value: int) -> bool:
        """The bar moved: the cards near the view now, in this same frame. True when it was the reader."""
        if self._moving:
            self.place()
            return False
        # Qt re-bounds the value only after rangeChanged, where the restore has already
        # set it in range: any other move is the reader's, who now decides where to be.
        self.restore_target = self.anchor = None
        self.pinned = value >= self.bar.maximum() - PIN_SLACK_PX
        self.place()
        return True

    def on_range_changed(self, maximum: int) -> None:
        if self.anchor is not None:  # the earlier cards lay out: stay by the card being read
            card, offset = self.anchor
            self._move_bar(card.y() - offset)
        elif self.restore_target is not None:
            self._apply_restore()
        elif self.pinned:
            self.bar.setValue(maximum)
        else:
            self.place(follow_reader=True)  # the heights of cards above changed the range: the reader stays put

"""Which of a transcript's cards are laid out: those near the view; the others wait hidden behind two spacers.

A chat of thousands of messages would otherwise relayout thousands of cards whenever one changes
(a card made at the top, an answer growing at the bottom), and a frame would wait for all of them.
Here only the cards within a margin around the viewport are shown; the cards above that window are
hidden and stand in as one spacer as tall as they were, the cards below it as another, so the
scroll bar and every position stay as if all were laid out. A card's height is remembered from its
last layout (each card reports its resizes here); a card never laid out counts the mean of those
measured until it is, and the card being read stays where it is when the estimates above it turn
out wrong. Moving the view moves the window at once, on the same event, so a frame never shows a gap.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import accumulate

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication, QBoxLayout, QWidget

ESTIMATED_HEIGHT_PX = 120  # a card not laid out yet, before any was: about a short answer; then the cards' mean
MARGIN_VIEWS = 1.5  # laid out beyond the viewport, above and below, in viewport heights ...
MIN_MARGIN_PX = 1200  # ... and at least this: a flick or a focus step lands on laid-out cards


class CardWindow(QObject):
    """Shows the cards near the view and hides the rest behind spacers of their height.

    `cards()` lists the cards top to bottom; `layout` holds them in that order between `top` and
    `bottom`, two spacer widgets made here. The owner calls `place()` whenever the view moved (with
    the scroll position it is about to show); when cards came, went or changed height, `replace`
    (the owner's, which calls `place()`) runs once the event at hand is over."""

    def __init__(self, layout: QBoxLayout, cards: Callable[[], Sequence[QWidget]], replace: Callable[[], None],
                 parent: QWidget) -> None:
        super().__init__(parent)
        self._layout, self._cards, self._replace = layout, cards, replace
        self.top, self.bottom = QWidget(parent), QWidget(parent)
        for spacer in (self.top, self.bottom):
            spacer.setObjectName("transcriptSpacer")
            spacer.hide()
        self._heights: dict[QWidget, int] = {}
        self._shown: set[QWidget] = set()
        self._scheduled = False
        # The card at the view's top and how far below its top the view starts: kept there when the
        # heights above it turn out other than estimated, so the text being read does not jump.
        self.reader: tuple[QWidget, int] | None = None
        # A card that had the keyboard focus when it left the window: the focus went to `focus_home` (the
        # view: hiding the focused card would have moved it to the next card and scrolled back there),
        # and the keys that step through messages go on from this card.
        self.focus_home: QWidget | None = None
        self.left_with_focus: QWidget | None = None

    # ------------------------------------------------------------ cards coming and going

    def watch(self, card: QWidget) -> None:
        """A new card: hidden until placed in the window."""
        card.setVisible(False)
        self.place_soon()

    def forget(self, card: QWidget) -> None:
        if card is self.left_with_focus:
            self.left_with_focus = None
        if card in self._shown:
            card.removeEventFilter(self)
        self._heights.pop(card, None)
        self._shown.discard(card)
        self.place_soon()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize and isinstance(watched, QWidget) and watched in self._shown:
            # Only laid-out cards are watched: their resizes are their layouts, whatever changed them.
            height = watched.height()
            if self._heights.get(watched) != height:
                self._heights[watched] = height
                self.place_soon()  # the spacers and the window follow its true height
        return False

    # ------------------------------------------------------------ the window

    def height_of(self, card: QWidget) -> int:
        return self._heights.get(card, self._estimate)

    @property
    def _estimate(self) -> int:
        return round(sum(self._heights.values()) / len(self._heights)) if self._heights else ESTIMATED_HEIGHT_PX

    def is_laid_out(self, card: QWidget) -> bool:
        return card in self._shown

    def laid_out_count(self) -> int:
        return len(self._shown)

    def laid_out(self) -> list[QWidget]:
        """The cards laid out now, top to bottom."""
        return [card for card in self._cards() if card in self._shown]

    def anchor_at(self, value: int) -> tuple[QWidget, int] | None:
        """The laid-out card at scroll position `value` and how far below it its top is (negative: above)."""
        laid_out = self.laid_out()
        card = next((card for card in laid_out if card.y() + card.height() > value), laid_out[-1] if laid_out else None)
        return (card, card.y() - value) if card is not None else None

    def offsets(self) -> list[int]:
        """Each card's top, as it is or would be if it were laid out, from the first card's top."""
        spacing, estimate, known = self._layout.spacing(), self._estimate, self._heights
        return [0, *accumulate(known.get(card, estimate) + spacing for card in self._cards())][:-1]

    def first_top(self) -> int:
        """Where the first card's top is in the content (after the margin and what comes before the cards)."""
        top = self._layout.contentsMargins().top()
        for index in range(self._layout.count()):
            item = self._layout.itemAt(index)
            widget = item.widget() if item is not None else None
            if widget is self.top or widget in self._shown or widget is self.bottom:
                break
            if widget is not None and not widget.isHidden():
                top += widget.sizeHint().height() + self._layout.spacing()
        return top

    def top_of(self, card: QWidget) -> int:
        """The card's top in the content: where it is, or where it will be once laid out."""
        cards = list(self._cards())
        return self.first_top() + self.offsets()[cards.index(card)] if card in cards else 0

    def place_soon(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            QTimer.singleShot(0, self, self._place_now)

    def _place_now(self) -> None:
        self._scheduled = False
        self._replace()

    def place(self, value: int, view_height: int, pinned: bool, keep: QWidget | None = None) -> None:
        """Lay out the cards near scroll position `value` (at the bottom when `pinned`), and `keep` wherever it is."""
        cards = list(self._cards())
        if not cards:
            self._set_spacers(0, 0)
            self._shown.clear()
            return
        spacing = self._layout.spacing()
        estimate, known = self._estimate, self._heights
        heights = [known.get(card, estimate) for card in cards]
        margin = max(round(view_height * MARGIN_VIEWS), MIN_MARGIN_PX)
        value -= self.first_top()  # from the first card's top
        if pinned:
            first, last = self._window_from_bottom(heights, spacing, view_height + margin)
        else:
            first, last = self._window_around(heights, spacing, value, view_height, margin)
        self.reader = self._reader(cards, heights, spacing, value)
        if keep is not None and keep in cards and not first <= cards.index(keep) < last:  # the window goes to it
            index = cards.index(keep)
            first, last = self._window_around(heights, spacing, sum(heights[:index]) + spacing * index, view_height, margin)
        wanted = cards[first:last]
        focused = QApplication.focusWidget()
        for card in self._shown - set(wanted):
            card.removeEventFilter(self)
            if focused is not None and self.focus_home is not None and (focused is card or card.isAncestorOf(focused)):
                self.focus_home.setFocus(Qt.FocusReason.OtherFocusReason)
                self.left_with_focus = card
            card.setVisible(False)
        for card in wanted:
            if card not in self._shown:
                card.installEventFilter(self)
                card.setVisible(True)
        self._shown = set(wanted)
        self._set_spacers(sum(heights[:first]) + spacing * (first - 1), sum(heights[last:]) + spacing * (len(cards) - last - 1))

    @staticmethod
    def _reader(cards: list[QWidget], heights: list[int], spacing: int, value: int) -> tuple[QWidget, int]:
        top = 0
        for card, height in zip(cards, heights):
            if top + height > value:
                return card, value - top
            top += height + spacing
        return cards[-1], value - (top - heights[-1] - spacing)

    @staticmethod
    def _window_from_bottom(heights: list[int], spacing: int, reach: int) -> tuple[int, int]:
        first, total = len(heights), 0
        while first > 0 and total < reach:
            first -= 1
            total += heights[first] + spacing
        return first, len(heights)

    @staticmethod
    def _window_around(heights: list[int], spacing: int, value: int, view_height: int, margin: int) -> tuple[int, int]:
        """The cards between `margin` above the view and `margin` below it (`value`: the view's top, from the first card's)."""
        top, bottom = value - margin, value + view_height + margin
        first, last, y = None, len(heights), 0
        for index, height in enumerate(heights):
            if first is None and y + height >= top:
                first = index
            if y > bottom:
                last = index
                break
            y += height + spacing
        if first is None:  # the view is below every card (a range not updated yet): the last ones
            first = max(len(heights) - 1, 0)
        return first, max(last, first + 1)

    def _set_spacers(self, above: int, below: int) -> None:
        for spacer, height in ((self.top, above), (self.bottom, below)):
            if height > 0:
                if spacer.height() != height or spacer.minimumHeight() != height:
                    spacer.setFixedHeight(height)
                if spacer.isHidden():
                    spacer.show()
            elif not spacer.isHidden():
                spacer.hide()

"""A transcript of thousands of messages lays out only the cards near the view: the others wait hidden
behind spacers of their height, so positions, scrolling, find and the keyboard still reach every message."""

from __future__ import annotations

from app.chat.message_list import Entry, MessageList
from app.chat.transcript_keys import focus_message
from tests.app.helpers import transcript_with_find

MESSAGES = 5000
MOST_LAID_OUT = 60  # a 400 px view and 1,200 px above and below it: ~45 of these short cards, of hundreds made


def _entries(count: int) -> list[Entry]:
    return [("user" if i % 2 == 0 else "assistant", f"Message number {i}.", "", ()) for i in range(count)]


def _transcript(qtbot, count: int = MESSAGES):  # type: ignore[no-untyped-def]
    return transcript_with_find(qtbot, _entries(count), 400)


def _settled(qtbot, view: MessageList) -> None:  # type: ignore[no-untyped-def]
    """Wait until every laid-out card has had its layout and the window no longer moves."""
    def still() -> bool:
        before = [(card, card.y(), card.height()) for card in view.laid_out_cards()]
        qtbot.wait(20)
        return before == [(card, card.y(), card.height()) for card in view.laid_out_cards()]
    qtbot.waitUntil(still)


def _no_gaps(view: MessageList) -> None:
    """The laid-out cards follow each other at the layout's spacing, right below the spacer of those above."""
    shown = view.laid_out_cards()
    cards = view.cards()
    first = cards.index(shown[0])
    assert shown == cards[first:first + len(shown)], "the laid-out cards are one run"
    content = view.widget()
    layout = content.layout() if content is not None else None
    assert layout is not None
    spacing = layout.spacing()
    for above, below in zip(shown, shown[1:]):
        assert below.y() == above.y() + above.height() + spacing, "no gap, no overlap"
    spacer = view.window_.top
    if first > 0:
        assert not spacer.isHidden() and shown[0].y() == spacer.y() + spacer.height() + spacing
    for card in shown:
        assert view.top_of(card) == card.y()


def _in_viewport(view: MessageList, card) -> bool:  # type: ignore[no-untyped-def]
    top = card.y() - view.verticalScrollBar().value()
    return card.isVisible() and top < view.viewport().height() and top + card.height() > 0


def test_a_long_chat_lays_out_only_the_cards_near_the_view(qtbot) -> None:
    _host, view, _bar = _transcript(qtbot)
    view.show_earlier(588)  # 600 cards made, as if the reader had scrolled up through them
    _settled(qtbot, view)
    cards = view.cards()
    assert len(cards) == 600 and view.hidden_count() == MESSAGES - 600
    shown = view.laid_out_cards()
    assert 0 < len(shown) <= MOST_LAID_OUT and [card for card in cards if card.isVisible()] == shown
    assert shown[-1] is cards[-1] and _in_viewport(view, cards[-1]), "pinned to the bottom: the last message"
    _no_gaps(view)
    assert view.verticalScrollBar().maximum() > 600 * 40, "the scroll bar spans every card made, laid out or not"

    middle = cards[300]
    view.verticalScrollBar().setValue(view.top_of(middle))  # the reader drags the bar to the middle
    _settled(qtbot, view)
    shown = view.laid_out_cards()
    assert middle in shown and middle.text() == f"Message number {MESSAGES - 600 + 300}."
    assert middle.y() == view.verticalScrollBar().value(), "the card read stays at the top as estimates above are corrected"
    assert len(shown) <= MOST_LAID_OUT and cards[-1] not in shown and cards[0] not in shown
    _no_gaps(view)
    view.scroll_to_bottom()
    _settled(qtbot, view)
    assert _in_viewport(view, cards[-1]) and middle not in view.laid_out_cards()
    _no_gaps(view)


def test_scrolling_to_the_top_reaches_the_first_message(qtbot) -> None:
    _host, view, _bar = _transcript(qtbot, count=300)
    view.show_all()
    _settled(qtbot, view)
    view.verticalScrollBar().setValue(0)
    _settled(qtbot, view)
    first = view.cards()[0]
    assert view.hidden_count() == 0 and first.text() == "Message number 0." and _in_viewport(view, first)
    assert len(view.laid_out_cards()) <= MOST_LAID_OUT and view.cards()[-1] not in view.laid_out_cards()
    _no_gaps(view)
    view.scroll_to_bottom()
    _settled(qtbot, view)
    assert _in_viewport(view, view.cards()[-1]) and view.cards()[-1].text() == "Message number 299."


def test_find_jumps_to_a_far_message_and_lays_it_out(qtbot) -> None:
    _host, view, bar = _transcript(qtbot, count=400)  # every earlier message becomes a card to be searched: fewer
    bar.open()
    qtbot.keyClicks(bar.field, "number 7.")  # only message 7: "number 70." and the like do not match
    assert bar.count_label.text() == "1 of 1"
    card = bar.current_card()
    assert card is view.cards()[7] and card.text() == "Message number 7."
    assert view.window_.is_laid_out(card)
    _settled(qtbot, view)
    assert _in_viewport(view, card) and len(view.laid_out_cards()) <= MOST_LAID_OUT
    _no_gaps(view)


def test_a_card_far_from_the_view_gets_the_keyboard_focus(qtbot) -> None:
    host, view, _bar = _transcript(qtbot, count=300)
    host.activateWindow()
    qtbot.waitUntil(host.isActiveWindow)
    view.show_all()
    _settled(qtbot, view)
    view.verticalScrollBar().setValue(0)
    _settled(qtbot, view)
    far = view.cards()[5]
    far.setFocus()
    qtbot.waitUntil(far.hasFocus)
    view.scroll_to_bottom()  # the focused card leaves the laid-out window
    _settled(qtbot, view)
    assert not view.window_.is_laid_out(far)
    assert focus_message(view, 1)  # Alt+Down from there: the next message is laid out and focused
    following = view.cards()[6]
    qtbot.waitUntil(following.hasFocus)
    assert view.window_.is_laid_out(following) and _in_viewport(view, following)


def test_an_answer_streaming_while_the_reader_is_far_up_shows_whole_at_the_bottom(qtbot) -> None:
    _host, view, _bar = _transcript(qtbot, count=200)
    view.show_all()
    card = view.add_card("assistant", "…")
    _settled(qtbot, view)
    assert view.window_.is_laid_out(card)
    view.verticalScrollBar().setValue(0)
    _settled(qtbot, view)
    assert not view.window_.is_laid_out(card)
    card.set_text("A long answer.\n\n" + "\n\n".join(f"Paragraph {i} of the answer." for i in range(30)))
    view.scroll_to_bottom()
    _settled(qtbot, view)
    assert view.window_.is_laid_out(card) and view.window_.height_of(card) == card.height() > 300
    bar = view.verticalScrollBar()
    assert bar.value() == bar.maximum() and card.y() + card.height() <= view.widget().height()
    _no_gaps(view)


def test_a_chat_reopened_where_it_was_read_lays_out_the_cards_there(qtbot) -> None:
    _host, view, _bar = _transcript(qtbot, count=300)
    view.show_all()
    _settled(qtbot, view)
    view.restore_scroll(0.5)  # the history puts the reader back halfway up
    _settled(qtbot, view)
    bar = view.verticalScrollBar()
    assert abs(bar.value() - bar.maximum() * 0.5) <= 1 and 0.49 <= view.scroll_from_bottom() <= 0.51
    shown = view.laid_out_cards()
    cards = view.cards()
    assert cards[0] not in shown and cards[-1] not in shown and len(shown) <= MOST_LAID_OUT
    assert any(_in_viewport(view, card) for card in shown)
    _no_gaps(view)

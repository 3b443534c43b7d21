"""A long chat opens with only its last messages as cards; scrolling to the top (or the button) shows
the earlier ones, and Delete on any card still removes the right message."""

from __future__ import annotations

from app.bridge import ChatMessage
from app.chat.message_list import SHOWN_AT_ONCE


def _long(count: int) -> list[ChatMessage]:
    return [ChatMessage("user" if i % 2 == 0 else "assistant", f"Message number {i}.") for i in range(count)]


def test_only_the_last_messages_are_cards_until_the_reader_scrolls_up(qtbot, scripted_window) -> None:
    window = scripted_window()
    tab = window.new_chat("Long", messages=_long(50))
    view = tab.view
    assert len(view.cards()) == SHOWN_AT_ONCE and view.hidden_count() == 50 - SHOWN_AT_ONCE
    assert view.cards()[-1].text() == "Message number 49." and view.earlier_button.text() == "Show earlier messages (38)"
    qtbot.waitUntil(lambda: view.verticalScrollBar().maximum() > 0)
    view.verticalScrollBar().setValue(0)  # the reader reached the top: one card now, the rest one per turn
    assert len(view.cards()) == SHOWN_AT_ONCE + 1
    qtbot.waitUntil(lambda: len(view.cards()) == 2 * SHOWN_AT_ONCE)
    assert len(view.cards()) == 2 * SHOWN_AT_ONCE and view.cards()[0].text() == f"Message number {50 - 2 * SHOWN_AT_ONCE}."
    qtbot.waitUntil(lambda: view.verticalScrollBar().value() > 0)  # still reading where they were, not at the new top
    view.earlier_button.click()
    view.show_all()
    assert len(view.cards()) == 50 and view.hidden_count() == 0 and not view.earlier_button.isVisibleTo(view)


def test_delete_on_a_card_of_a_long_chat_removes_that_message(qtbot, scripted_window) -> None:
    window = scripted_window()
    tab = window.new_chat("Long", messages=_long(40))
    card = tab.view.message_cards()[2]  # message 30
    assert card.text() == "Message number 30."
    card.delete_button.click()
    assert len(tab.messages) == 30 and tab.messages[-1].content == "Message number 29."
    tab.message_actions.delete_message(5)  # a message that is not a card yet
    assert len(tab.messages) == 5 and [c.text() for c in tab.view.message_cards()][-1] == "Message number 4."

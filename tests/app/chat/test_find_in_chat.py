"""Find in chat: typing counts the matches, Enter / Shift+Enter / F3 step through them, every match is
highlighted and the current one differently, the view scrolls to it, Esc closes and clears."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from app.chat.message_list import SHOWN_AT_ONCE
from app.chat.transcript_search import (
    CURRENT_BACKGROUND,
    MATCH_BACKGROUND,
    text_widgets,
)
from tests.app.helpers import transcript_with_find

CHAT = [
    ("user", "Where do foxes live?"),
    ("assistant", "A fox lives in a den. Foxes dig dens in forests."),
    ("user", "And what do they eat?"),
    ("assistant", "Mostly mice.\n\n```python\nfox = 'eats mice'\n```\n\nA FOX eats berries too."),
]


def _transcript(qtbot, messages=CHAT, height: int = 300):  # type: ignore[no-untyped-def]
    # active: shortcuts (F3) go to the active window only
    return transcript_with_find(qtbot, [(role, text, "", ()) for role, text in messages], height, active=True)


def _highlights(card) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """(highlighted text, its background colour) of every extra selection in a card's text widgets."""
    return [(selection.cursor.selectedText(), selection.format.background().color().name())
            for browser in text_widgets(card) for selection in browser.extraSelections()]


def test_typing_counts_matches_and_enter_steps_through_them(qtbot) -> None:
    _host, view, bar = _transcript(qtbot, height=800)  # the whole chat in view: the first match is current
    bar.open()
    qtbot.keyClicks(bar.field, "fox")
    # "foxes" (question), "fox", "Foxes" (answer), "fox" in the code, "FOX": case-insensitive by default
    assert len(bar.matches) == 5 and bar.count_label.text() == "1 of 5"
    cards = view.cards()
    assert bar.current_card() is cards[0]
    assert _highlights(cards[0]) == [("fox", CURRENT_BACKGROUND)]
    assert _highlights(cards[1]) == [("fox", MATCH_BACKGROUND), ("Fox", MATCH_BACKGROUND)]
    qtbot.keyClick(bar.field, Qt.Key.Key_Return)
    assert bar.count_label.text() == "2 of 5" and bar.current_card() is cards[1]
    assert _highlights(cards[1])[0] == ("fox", CURRENT_BACKGROUND) and _highlights(cards[0]) == [("fox", MATCH_BACKGROUND)]
    qtbot.keyClick(bar.field, Qt.Key.Key_Return)
    qtbot.keyClick(bar.field, Qt.Key.Key_Return)
    assert bar.count_label.text() == "4 of 5" and bar.current_card() is cards[3]
    code_view = text_widgets(cards[3])[1]
    assert code_view.extraSelections()[0].format.background().color() == QColor(CURRENT_BACKGROUND)  # inside the code block
    qtbot.keyClick(bar.field, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert bar.count_label.text() == "3 of 5"
    qtbot.keyClick(bar.field, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(bar.field, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(bar.field, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
    assert bar.count_label.text() == "5 of 5"  # wraps from the first to the last
    qtbot.keyClick(bar.field, Qt.Key.Key_F3)
    assert bar.count_label.text() == "1 of 5"


def test_match_case_and_no_match(qtbot) -> None:
    _host, view, bar = _transcript(qtbot)
    bar.open()
    bar.case_box.setChecked(True)
    qtbot.keyClicks(bar.field, "FOX")
    assert bar.count_label.text() == "1 of 1" and bar.current_card() is view.cards()[3]
    qtbot.keyClicks(bar.field, "GLOVE")
    assert bar.matches == [] and bar.count_label.text() == "No matches" and bar.current_card() is None
    assert all(_highlights(card) == [] for card in view.cards())
    assert bar.field.accessibleDescription() == "No matches"


def test_the_view_scrolls_to_the_current_match_and_esc_clears(qtbot) -> None:
    messages = [("user" if i % 2 == 0 else "assistant", f"Line {i} of a long chat.\n\nMore words here.") for i in range(10)]
    messages[1] = ("assistant", "The needle is here, near the top.")
    messages[9] = ("assistant", "Another needle, at the bottom.")
    _host, view, bar = _transcript(qtbot, messages)
    view.scroll_to_bottom()
    bar_scroll = view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar_scroll.maximum() > 0 and bar_scroll.value() == bar_scroll.maximum())
    bar.open()
    qtbot.keyClicks(bar.field, "needle")
    assert bar.count_label.text() == "2 of 2"  # the first match in view, not the one far above
    assert bar_scroll.value() == bar_scroll.maximum()
    qtbot.keyClick(bar.field, Qt.Key.Key_Return)
    card = view.cards()[1]
    assert bar.current_card() is card and bar.count_label.text() == "1 of 2"
    top = card.mapTo(view.widget(), card.rect().topLeft()).y()
    assert bar_scroll.value() <= top < bar_scroll.value() + view.viewport().height()  # the card is in view
    qtbot.keyClick(bar.field, Qt.Key.Key_Escape)
    assert not bar.isVisible() and all(_highlights(c) == [] for c in view.cards())


def test_a_match_in_messages_not_shown_yet_makes_them_cards(qtbot) -> None:
    messages = [("user" if i % 2 == 0 else "assistant", f"Message {i}.") for i in range(40)]
    messages[0] = ("user", "The very first question about otters.")
    _host, view, bar = _transcript(qtbot, messages)
    assert view.hidden_count() == 40 - SHOWN_AT_ONCE
    bar.open()
    qtbot.keyClicks(bar.field, "otters")
    assert view.hidden_count() == 0 and bar.count_label.text() == "1 of 1"
    assert bar.current_card() is view.cards()[0]


def test_ctrl_f_in_the_window_opens_the_current_tabs_find_bar(qtbot, scripted_window) -> None:
    from tests.app.helpers import type_and_send

    window = scripted_window()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    tab = window.current_tab()
    type_and_send(qtbot, tab, "Tell me about owls")
    window.bridge.answer(tab.chat_id, "Owls hunt at night. An owl sees well in the dark.")
    type_and_send(qtbot, tab, "And eagles?")  # answering while the reader searches
    qtbot.keyClick(tab.input, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert tab.find_bar.isVisible() and tab.find_bar.field.hasFocus()
    qtbot.keyClicks(tab.find_bar.field, "owl")
    assert tab.find_bar.count_label.text() == "1 of 3"
    window.bridge.begin_turn(tab.chat_id)
    window.bridge.token_received.emit(tab.chat_id, "Eagles and owls both hunt.")  # streams in while the bar is open
    qtbot.waitUntil(lambda: tab.find_bar.count_label.text() == "1 of 4")
    qtbot.keyClick(tab.find_bar.field, Qt.Key.Key_Escape)  # closes the bar; the answer goes on (Esc is Stop elsewhere)
    assert not tab.find_bar.isVisible() and window.bridge.cancelled == [] and tab.answering
    qtbot.keyClick(tab.input, Qt.Key.Key_Escape)
    assert window.bridge.cancelled == [tab.chat_id]

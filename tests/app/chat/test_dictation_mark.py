"""A spoken user message carries a quiet "Dictated · 3.1 s · en" line on its card, in the chat as sent and as
reopened from the history; a typed one has none. What the speech model heard is in the line's tooltip where
the person changed the words before sending. (The recording and the speech model: tests/app/voice/test_dictation.py.)"""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.chat.message_card import MessageCard
from app.chat.tab import ChatTab
from engine.protocol import Dictation
from tests.app.helpers import wait_restored

MODEL = "ggml-base.en.bin"
LONG = 60_000


def _send(qtbot, window, tab: ChatTab, text: str, heard: Dictation | None) -> None:  # type: ignore[no-untyped-def]
    tab.input.setPlainText(text)
    tab.dictation.pending = heard  # as the microphone button leaves it once the words are in the box
    qtbot.keyClick(tab.input, Qt.Key.Key_Return)
    window.bridge.answer(tab.chat_id, "Done.")
    assert not tab.answering


def _marks(cards: list[MessageCard]) -> list[tuple[str, str, str]]:
    """Each user card's mark (text, tooltip) and accessible name; an unmarked card shows "" and no line."""
    return [(card.dictation_mark.text() if card.dictation_mark.isVisibleTo(card) else "",
             card.dictation_mark.toolTip() if card.dictation_mark.isVisibleTo(card) else "", card.accessibleName())
            for card in cards if card.role == "user"]


EXPECTED = [
    ("Dictated · 3.1 s · en", f"Transcribed by {MODEL}", "You, 4 words, dictated"),
    ("", "", "You, 3 words"),
    ("Dictated · 2.0 s · en · edited", f"Heard: \u201cturn of the lights\u201d\nTranscribed by {MODEL}",
     "You, 5 words, dictated"),
]


def test_a_dictated_message_is_marked_as_sent_and_when_reopened_a_typed_one_is_not(  # type: ignore[no-untyped-def]
        scripted_window, qtbot) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    _send(qtbot, window, tab, "Turn off the lights", Dictation("Turn off the lights", "en", MODEL, 3.14))
    _send(qtbot, window, tab, "Typed this one", None)
    _send(qtbot, window, tab, "Turn off the lights too", Dictation("turn of the lights", "en", MODEL, 2.0))
    assert [m.dictation is not None for m in tab.messages if m.role == "user"] == [True, False, True]
    assert _marks(tab.view.message_cards()) == EXPECTED
    mark = tab.view.message_cards()[-2].dictation_mark
    assert mark.accessibleName() == "Dictated, 2.0 seconds, en, edited before sending"
    assert mark.accessibleDescription() == "Heard: \u201cturn of the lights\u201d"
    assert mark.objectName() == "dictationMark" and mark.property("role") == "hint"  # the quiet style of hints

    chat_id = tab.chat_id
    window.close_tab(tab)
    window.history_ui.open_chat(chat_id)  # as the sidebar does
    qtbot.waitUntil(lambda: any(t.chat_id == chat_id and len(t.view.message_cards()) == 6
                                for t in window.chat_tabs()), timeout=LONG)
    reopened = next(t for t in window.chat_tabs() if t.chat_id == chat_id)
    assert reopened is not tab
    assert _marks(reopened.view.message_cards()) == EXPECTED

"""A screen reader's view of the transcript, through Qt's accessibility interfaces: each message is a
focusable list item named "Assistant, 3 words" whose description is its text; the focus steps from
message to message; an announcement reaches QAccessible with its text and politeness."""

from __future__ import annotations

from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QLineEdit, QVBoxLayout, QWidget

from app.chat.message_list import SHOWN_AT_ONCE, MessageList
from app.chat.transcript_keys import focus_message
from app.misc.accessibility import announce


def _view(qtbot, messages):  # type: ignore[no-untyped-def]
    host = QWidget()
    view = MessageList(host)
    outside = QLineEdit(host)
    layout = QVBoxLayout(host)
    layout.addWidget(view)
    layout.addWidget(outside)
    view.set_messages([(role, text, "", ()) for role, text in messages])
    qtbot.addWidget(host)
    host.resize(500, 400)
    host.show()
    qtbot.waitExposed(host)
    host.activateWindow()
    qtbot.waitUntil(host.isActiveWindow)  # focus changes need the active window
    return host, view, outside


def test_each_message_is_a_named_list_item_with_its_text(qtbot) -> None:
    _host, view, _outside = _view(qtbot, [("user", "Hello there"), ("assistant", "One **bold** word")])
    user, answer = view.cards()
    names = [QAccessible.queryAccessibleInterface(card).text(QAccessible.Text.Name) for card in (user, answer)]
    assert names == ["You, 2 words", "Assistant, 3 words"]
    interface = QAccessible.queryAccessibleInterface(answer)
    assert interface.role() == QAccessible.Role.ListItem
    assert interface.text(QAccessible.Text.Description) == "One bold word"  # read as shown, without Markdown
    answer.set_text("Now it says one")
    assert QAccessible.queryAccessibleInterface(answer).text(QAccessible.Text.Name) == "Assistant, 4 words"  # follows a stream
    assert interface.state().focusable


def test_the_focus_steps_from_message_to_message(qtbot) -> None:
    messages = [("user" if i % 2 == 0 else "assistant", f"Message {i}") for i in range(SHOWN_AT_ONCE + 2)]
    _host, view, outside = _view(qtbot, messages)
    cards = view.cards()
    outside.setFocus()
    qtbot.waitUntil(outside.hasFocus)
    assert focus_message(view, -1)  # from outside: the last message
    qtbot.waitUntil(lambda: cards[-1].hasFocus())
    assert focus_message(view, -1)
    qtbot.waitUntil(lambda: cards[-2].hasFocus())
    assert focus_message(view, 1) and focus_message(view, 1) is False  # past the last: the caller's turn
    qtbot.waitUntil(lambda: cards[-1].hasFocus())
    cards[0].setFocus()
    qtbot.waitUntil(cards[0].hasFocus)
    assert focus_message(view, -1)  # up from the first card: the messages not shown yet become cards
    assert view.hidden_count() == 0
    qtbot.waitUntil(lambda: view.cards()[1].hasFocus())
    assert view.cards()[1].text() == "Message 1"


def test_announce_sends_an_announcement_event(qtbot, monkeypatch) -> None:
    _host, view, _outside = _view(qtbot, [("assistant", "Done")])
    sent: list[tuple[QAccessible.Event, str, object, QAccessible.AnnouncementPoliteness]] = []
    original = QAccessible.updateAccessibility

    def spy(event) -> None:  # type: ignore[no-untyped-def]
        if isinstance(event, QAccessibleAnnouncementEvent):
            sent.append((event.type(), event.message(), event.object(), event.politeness()))
        original(event)

    monkeypatch.setattr(QAccessible, "updateAccessibility", spy)
    announce(view.cards()[0], "The answer is ready")
    announce(view, "Stopped", assertive=True)
    assert sent == [(QAccessible.Event.Announcement, "The answer is ready", view.cards()[0], QAccessible.AnnouncementPoliteness.Polite),
                    (QAccessible.Event.Announcement, "Stopped", view, QAccessible.AnnouncementPoliteness.Assertive)]

"""The window through a screen reader's eyes (Qt's accessibility interfaces): every control has a name;
Alt+Up / Alt+Down step through the messages; a finished answer and an error are announced; Tab goes
through a tab as it is seen."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QTabBar,
    QTextEdit,
    QWidget,
)

from tests.app.helpers import type_and_send, wait_restored

CONTROLS = (QAbstractButton, QLineEdit, QTextEdit, QPlainTextEdit, QComboBox, QAbstractSpinBox, QAbstractItemView, QTabBar)


def _busy_window(qtbot, scripted_window):  # type: ignore[no-untyped-def]
    """A window showing as much as it can at once: code, a queued message, the find bar, the chat panel."""
    window = scripted_window()
    wait_restored(qtbot, window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    tab = window.current_tab()
    type_and_send(qtbot, tab, "Show code")
    window.bridge.answer(tab.chat_id, "Here:\n\n```python\nx = 1\n```\n")
    type_and_send(qtbot, tab, "Again")
    type_and_send(qtbot, tab, "Queued follow-up")
    window.view_commands.toggle_chat_panel()
    window.view_commands.find_in_chat()
    # A widget added to a shown layout is shown by a queued call: wait for the cards.
    qtbot.waitUntil(lambda: tab.message_queue.isVisible() and all(card.isVisible() for card in tab.view.cards()))
    return window, tab


def _name(widget: QWidget) -> str:
    return QAccessible.queryAccessibleInterface(widget).text(QAccessible.Text.Name)


def _is_qt_internal(widget: QWidget) -> bool:
    """Parts Qt draws inside a control that has the name (a combo box's popup list, a line edit's clear
    button, a spin box's editor, the menu bar's overflow arrow)."""
    parent = widget.parentWidget()
    return (widget.objectName().startswith("qt_") or isinstance(parent, (QLineEdit, QAbstractSpinBox, QComboBox))
            or parent is not None and parent.metaObject().className() == "QComboBoxPrivateContainer")


def _where(widget: QWidget) -> str:
    """A control as a failure names it: its class, tooltip and the classes above it."""
    above, parent = [], widget.parentWidget()
    while parent is not None and len(above) < 4:
        above.append(type(parent).__name__ + (f"#{parent.objectName()}" if parent.objectName() else ""))
        parent = parent.parentWidget()
    return f"{type(widget).__name__} ({widget.toolTip()!r}) in {' < '.join(above)}"


def test_every_control_has_an_accessible_name(qtbot, scripted_window) -> None:
    window, tab = _busy_window(qtbot, scripted_window)
    # What a screen reader can reach: the shown controls (a hidden one is not in the accessibility tree).
    controls = [w for w in window.findChildren(QWidget)
                if isinstance(w, CONTROLS) and w.isVisible() and not _is_qt_internal(w)]
    unnamed = [_where(w) for w in controls if not _name(w)]
    assert unnamed == [], "\n".join(unnamed)
    names = {_name(w) for w in controls}
    assert {"Find in chat", "Previous match", "Next match", "Close find", "Match case", "Queued message",
            "Cancel queued message", "Message", "Send", "Stop", "Copy message", "Copy this code", "Temperature"} <= names
    assert _name(tab.think_control.choice_box) == "Thinking"  # shown for thinking models only
    assert len(controls) > 40  # the walk saw the whole window, panel and sidebar included
    menus = [action for menu in window.menuBar().actions() if menu.menu() for action in menu.menu().actions()]
    assert [action for action in menus if not action.isSeparator() and not action.text()] == []
    messages = QAccessible.queryAccessibleInterface(tab.view.widget())
    assert messages.role() == QAccessible.Role.List and messages.text(QAccessible.Text.Name) == "Messages"
    window.bridge.answer(tab.chat_id, "ok")


def test_alt_arrows_move_through_the_messages(qtbot, scripted_window) -> None:
    window = scripted_window()
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    tab = window.current_tab()
    type_and_send(qtbot, tab, "Name three colours")
    window.bridge.answer(tab.chat_id, "Red, green and blue.")
    tab.input.setFocus()
    qtbot.waitUntil(tab.input.hasFocus)
    qtbot.keyClick(tab.input, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)
    answer, question = tab.view.cards()[1], tab.view.cards()[0]
    qtbot.waitUntil(answer.hasFocus)
    focused = QAccessible.queryAccessibleInterface(QApplication.focusWidget())
    assert focused.text(QAccessible.Text.Name) == "Assistant, 4 words" and focused.role() == QAccessible.Role.ListItem
    assert focused.text(QAccessible.Text.Description) == "Red, green and blue."
    qtbot.keyClick(answer, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(question.hasFocus)
    qtbot.keyClick(question, Qt.Key.Key_Down, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(answer.hasFocus)
    qtbot.keyClick(answer, Qt.Key.Key_Down, Qt.KeyboardModifier.AltModifier)  # past the last message: back to writing
    qtbot.waitUntil(tab.input.hasFocus)


def test_a_finished_answer_and_an_error_are_announced(qtbot, scripted_window, monkeypatch) -> None:
    window = scripted_window()
    tab = window.current_tab()
    sent: list[tuple[str, object, QAccessible.AnnouncementPoliteness]] = []
    original = QAccessible.updateAccessibility

    def spy(event) -> None:  # type: ignore[no-untyped-def]
        if isinstance(event, QAccessibleAnnouncementEvent):
            sent.append((event.message(), event.object(), event.politeness()))
        original(event)

    monkeypatch.setattr(QAccessible, "updateAccessibility", spy)
    type_and_send(qtbot, tab, "Hello")
    window.bridge.answer(tab.chat_id, "Hi! How can I **help**?")
    polite, assertive = QAccessible.AnnouncementPoliteness.Polite, QAccessible.AnnouncementPoliteness.Assertive
    assert sent == [("Answer finished. Hi! How can I help?", tab.view.cards()[1], polite)]
    type_and_send(qtbot, tab, "Again")
    type_and_send(qtbot, tab, "Later")
    window.bridge.chat_error.emit(tab.chat_id, "The context is full.")
    assert sent[1] == ("Queued: sent when the answer ends", tab.message_queue, polite)
    assert sent[2][0] == "Error: The context is full." and sent[2][2] == assertive
    window.bridge.finish(tab.chat_id, "", reason="error")


def test_tab_goes_through_the_chat_as_it_is_seen(qtbot, scripted_window) -> None:
    window, tab = _busy_window(qtbot, scripted_window)
    tab.model_picker.setFocus()
    qtbot.waitUntil(tab.model_picker.hasFocus)
    seen = []
    for _ in range(40):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        seen.append(QApplication.focusWidget())
        if seen[-1] is tab.send_button or seen[-1] is tab.stop_button:
            break
    cards = tab.view.cards()
    order = [tab.compare_button, tab.find_bar.field, tab.view, cards[0], cards[0].edit_button, cards[1], cards[2],
             tab.message_queue.items()[0].editor, tab.attachments, tab.input, tab.panel_button, tab.stop_button]
    positions = [next((i for i, w in enumerate(seen) if w is widget or widget.isAncestorOf(w)), -1) for widget in order]
    assert -1 not in positions and positions == sorted(positions), [_name(w) or type(w).__name__ for w in seen]
    tab.input.setFocus()
    qtbot.waitUntil(tab.input.hasFocus)
    qtbot.keyClick(tab.input, Qt.Key.Key_Tab, Qt.KeyboardModifier.ShiftModifier)  # and back up, to what is above it
    assert tab.attachments.isAncestorOf(QApplication.focusWidget())
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab, Qt.KeyboardModifier.ShiftModifier)
    assert QApplication.focusWidget() is tab.message_queue.items()[0].cancel_button
    window.bridge.answer(tab.chat_id, "ok")

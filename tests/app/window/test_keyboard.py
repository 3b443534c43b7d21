"""Every command is in a menu with its keys and listed in Help > Keyboard shortcuts; the controls carry
names a screen reader can say; Ctrl++ / Ctrl+- change the text size, remembered."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QWidget,
)

from app.settings.store import Settings
from app.window.shortcuts import ShortcutsDialog, menu_shortcuts
from tests.app.helpers import wait_restored


def _active(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)


def test_the_shortcuts_dialog_lists_every_menu_command_and_its_keys(qtbot, scripted_window) -> None:
    window = scripted_window()
    rows = menu_shortcuts(window.menuBar())
    commands = {command for _, command, _ in rows}
    assert {"Show sidebar", "Chat panel", "Larger text", "Smaller text", "Keyboard shortcuts", "Regenerate"} <= commands
    keyed = {command: keys for _, command, keys in rows}
    assert keyed["Show sidebar"] == "Ctrl+B" and keyed["Larger text"].startswith("Ctrl++")
    dialog = ShortcutsDialog(window.menuBar(), window)
    qtbot.addWidget(dialog)
    shown = [tuple(dialog.table.item(row, column).text() for column in range(3)) for row in range(dialog.table.rowCount())]
    assert all(row in shown for row in rows) and ("Sidebar", "Rename the selected chat", "F2") in shown
    every_action = [a for m in window.menuBar().actions() if m.menu() for a in m.menu().actions() if a.text()]
    assert all("&" in action.text() for action in every_action)  # each reachable with Alt and its letter


def test_every_control_has_a_name_a_screen_reader_can_say(qtbot, scripted_window) -> None:
    window = scripted_window()
    wait_restored(qtbot, window)
    tab = window.current_tab()
    tab.input.setPlainText("Show code")
    tab.send()
    window.bridge.answer(tab.chat_id, "Here:\n\n```python\nx = 1\n```\n")
    window.view_commands.toggle_chat_panel()
    qtbot.waitUntil(lambda: tab.view.cards()[-1].browser.code_block_widgets()[0].copy_button.isVisible())
    kinds = (QAbstractButton, QLineEdit, QPlainTextEdit, QComboBox, QAbstractSpinBox)
    controls = [w for w in window.findChildren(QWidget)
                if isinstance(w, kinds) and w.isVisible() and not isinstance(w.parent(), QAbstractSpinBox)]
    unnamed = [w for w in controls if not (w.accessibleName() or getattr(w, "text", lambda: "")())]
    names = {w.accessibleName() or w.text() for w in controls}
    assert {"Copy message", "Copy this code", "Edit", "Close chat", "Temperature"} <= names and unnamed == []
    cards = tab.view.cards()
    assert [card.accessibleName() for card in cards] == ["You, 2 words", "Assistant, 4 words"]  # "Here:" and "x = 1"


def test_ctrl_plus_and_minus_change_the_text_size_and_it_is_remembered(qtbot, scripted_window) -> None:
    window = scripted_window()
    _active(qtbot, window)
    start = QApplication.font().pointSizeF()
    qtbot.keyClick(window, Qt.Key.Key_Plus, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.font().pointSizeF() == start + 1
    assert Settings.load().get("window.font_size") == start + 1
    qtbot.keyClick(window, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.font().pointSizeF() == start - 1
    window.close()
    again = scripted_window()  # a new window starts at the remembered size
    assert QApplication.font().pointSizeF() == start - 1
    _active(qtbot, again)
    qtbot.keyClick(again, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.font().pointSizeF() == start and Settings.load().get("window.font_size") == 0.0


def test_keys_for_the_current_tab(qtbot, scripted_window) -> None:
    window = scripted_window()
    _active(qtbot, window)
    tab = window.current_tab()
    tab.input.setPlainText("Question")
    tab.send()
    window.bridge.answer(tab.chat_id, "Answer.")
    qtbot.keyClick(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)  # Regenerate
    assert len(window.bridge.submitted) == 2 and tab.answering
    window.bridge.answer(tab.chat_id, "Another answer.")
    qtbot.keyClick(window, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert QApplication.clipboard().text() == "Another answer."
    window.sidebar.sidebar.search.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    assert tab.input.hasFocus()

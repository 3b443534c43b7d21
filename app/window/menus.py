"""The window's menus and keyboard shortcuts, in one place so every key is easy to find."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QMenu

if TYPE_CHECKING:
    from app.window.mainwindow import MainWindow

TAB_KEYS = (("Ctrl+Tab", 1), ("Ctrl+PgDown", 1), ("Ctrl+Shift+Tab", -1), ("Ctrl+PgUp", -1))


def build_menus(window: MainWindow) -> None:
    chat = window.menuBar().addMenu("&Chat")
    add_action(chat, "&New chat", lambda: window.new_chat(), "Ctrl+T", QKeySequence.StandardKey.New)
    add_action(chat, "&Close chat", window.close_current_chat, "Ctrl+W")
    add_action(chat, "&Stop answering", window.stop_current, "Esc")
    chat.addSeparator()
    _history_actions(window, chat)
    chat.addSeparator()
    add_action(chat, "&Quit", window.close, "Ctrl+Q", QKeySequence.StandardKey.Quit)
    model = window.menuBar().addMenu("&Model")
    add_action(model, "&Settings…", window.open_settings, "Ctrl+,", QKeySequence.StandardKey.Preferences)
    add_action(model, "&Cancel loading", window.bridge.cancel_load)
    add_action(model, "&Model details", window.gauge.show_details)
    help_menu = window.menuBar().addMenu("&Help")
    add_action(help_menu, "&About Hearth", window.show_about)
    for keys, step in TAB_KEYS:
        QShortcut(QKeySequence(keys), window, lambda step=step: window.switch_tab(step))


def _history_actions(window: MainWindow, chat: QMenu) -> None:
    from app.history import dialog as dialogs

    history = window.history_ui
    add_action(chat, "C&hats…", lambda: dialogs.show_chat_list(history), "Ctrl+Shift+H")
    add_action(chat, "Export as &Markdown…", lambda: dialogs.export_with_dialog(history, "markdown"))
    add_action(chat, "Export as &JSON…", lambda: dialogs.export_with_dialog(history, "json"))
    add_action(chat, "&Import JSON…", lambda: dialogs.import_with_dialog(history))


def add_action(
    menu: QMenu, text: str, slot: Callable[[], object], keys: str = "", standard: QKeySequence.StandardKey | None = None
) -> QAction:
    """An action with our shortcut first, then the platform's standard ones for the same job."""
    action = QAction(text, menu)
    shortcuts = [QKeySequence(keys)] if keys else []
    if standard is not None:
        shortcuts += [s for s in QKeySequence.keyBindings(standard) if s not in shortcuts]
    action.setShortcuts(shortcuts)
    action.triggered.connect(lambda _checked=False: slot())
    menu.addAction(action)
    return action

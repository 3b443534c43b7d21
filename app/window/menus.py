"""The window's menus and keyboard shortcuts, in one place so every key is easy to find."""

from __future__ import annotations

from typing import Callable, Protocol

from PySide6.QtGui import QAction, QKeySequence, QShortcut
from PySide6.QtWidgets import QMainWindow, QMenu

from app.window.view_commands import ViewCommands

TAB_KEYS = (("Ctrl+Tab", 1), ("Ctrl+PgDown", 1), ("Ctrl+Shift+Tab", -1), ("Ctrl+PgUp", -1))


class WindowCommands(Protocol):
    """What the menus and shortcuts do (MainWindow provides them)."""

    def new_chat(self) -> object: ...
    def close_current_chat(self) -> None: ...
    def stop_current(self) -> None: ...
    def switch_tab(self, step: int) -> None: ...
    def show_chat_list(self) -> None: ...
    def export_chat(self, kind: str) -> None: ...
    def import_chat(self) -> None: ...
    def close(self) -> bool: ...
    def open_settings(self) -> None: ...
    def open_get_models(self) -> None: ...
    def open_tools(self) -> None: ...
    def cancel_loading(self) -> None: ...
    def show_model_details(self) -> None: ...
    def check_quantization(self) -> None: ...
    def open_compare(self) -> None: ...
    def show_about(self) -> None: ...


def build_menus(window: QMainWindow, commands: WindowCommands, view: ViewCommands) -> None:
    """The menu bar of `window` and its tab-switching shortcuts; every command has its place here."""
    chat = window.menuBar().addMenu("&Chat")
    add_action(chat, "&New chat", commands.new_chat, "Ctrl+T", QKeySequence.StandardKey.New)
    add_action(chat, "&Close chat", commands.close_current_chat, "Ctrl+W")
    add_action(chat, "&Rename chat", view.rename_tab, "F2")
    add_action(chat, "&Stop answering", commands.stop_current, "Esc")
    add_action(chat, "Re&generate", view.regenerate, "Ctrl+R")
    add_action(chat, "Copy &last answer", view.copy_last_answer, "Ctrl+Shift+C")
    add_action(chat, "Com&pare models…", commands.open_compare)
    add_action(chat, "&Write a message", view.focus_input, "Ctrl+L")
    add_action(chat, "&Find in chat…", view.find_in_chat, "Ctrl+F", QKeySequence.StandardKey.Find)
    chat.addSeparator()
    add_action(chat, "C&hats…", commands.show_chat_list, "Ctrl+Shift+H")
    add_action(chat, "Export as &Markdown…", lambda: commands.export_chat("markdown"))
    add_action(chat, "Export as &JSON…", lambda: commands.export_chat("json"))
    add_action(chat, "&Import JSON…", commands.import_chat)
    chat.addSeparator()
    add_action(chat, "&Quit", commands.close, "Ctrl+Q", QKeySequence.StandardKey.Quit)
    view_menu = window.menuBar().addMenu("&View")
    add_action(view_menu, "Show &sidebar", view.toggle_sidebar, "Ctrl+B")
    add_action(view_menu, "Search c&hats", view.search_chats, "Ctrl+K")
    add_action(view_menu, "Chat &panel", view.toggle_chat_panel, "Ctrl+Shift+P")
    view_menu.addSeparator()
    add_action(view_menu, "&Larger text", lambda: view.zoom(1), "Ctrl++", QKeySequence.StandardKey.ZoomIn).setShortcuts(
        [QKeySequence("Ctrl++"), QKeySequence("Ctrl+=")])  # "=" is "+" without Shift on many keyboards
    add_action(view_menu, "S&maller text", lambda: view.zoom(-1), "Ctrl+-", QKeySequence.StandardKey.ZoomOut)
    add_action(view_menu, "&Default text size", view.reset_zoom, "Ctrl+0")
    model = window.menuBar().addMenu("&Model")
    add_action(model, "&Settings…", commands.open_settings, "Ctrl+,", QKeySequence.StandardKey.Preferences)
    add_action(model, "&Get models…", commands.open_get_models, "Ctrl+Shift+G")
    add_action(model, "&Tools…", commands.open_tools)
    add_action(model, "&Cancel loading", commands.cancel_loading)
    add_action(model, "&Model details", commands.show_model_details)
    model.addSeparator()
    add_action(model, "Check &quantization…", commands.check_quantization)
    help_menu = window.menuBar().addMenu("&Help")
    add_action(help_menu, "&Keyboard shortcuts", view.show_shortcuts, "Ctrl+/", QKeySequence.StandardKey.HelpContents)
    add_action(help_menu, "&About Hearth", commands.show_about)
    for keys, step in TAB_KEYS:
        QShortcut(QKeySequence(keys), window, lambda step=step: commands.switch_tab(step))


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

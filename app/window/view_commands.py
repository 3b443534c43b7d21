"""The View menu's commands and the keys for the current tab: sidebar, chat panel, font size, shortcuts.

The font size is the application's: 0 in the settings follows the system's font,
anything else is a point size Ctrl++ / Ctrl+- set (and Ctrl+0 forgets). Every
widget follows, the messages' rich text included.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QApplication, QMenuBar, QWidget

from app.chat.tab import ChatTab
from app.settings.store import Settings
from app.window.sidebar_control import SidebarControl
from app.window.tabwidget import ChatTabWidget


class ViewHost(Protocol):
    """What the commands work on (MainWindow is one)."""

    settings: Settings
    sidebar: SidebarControl
    tabs: ChatTabWidget

    def chat_tabs(self) -> list[ChatTab]: ...
    def current_tab(self) -> ChatTab | None: ...
    def menuBar(self) -> QMenuBar: ...  # noqa: N802 - Qt's name

MIN_POINTS, MAX_POINTS = 7.0, 32.0
_system_points: float | None = None  # the system's font size, before Hearth changed it


def system_points() -> float:
    global _system_points
    if _system_points is None:
        _system_points = QApplication.font().pointSizeF()
    return _system_points


class ViewCommands(QObject):
    """What the View menu and the tab keys do, on one window."""

    def __init__(self, window: ViewHost, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.window = window
        self.apply_font_size()

    # ------------------------------------------------------------ font size

    def font_points(self) -> float:
        stored = float(self.window.settings.get("window.font_size"))
        return stored if stored > 0 else system_points()

    def zoom(self, step: float) -> None:
        """Ctrl++ / Ctrl+-: one point larger or smaller, remembered."""
        points = min(MAX_POINTS, max(MIN_POINTS, self.font_points() + step))
        self._store_font_size(points)

    def reset_zoom(self) -> None:
        self._store_font_size(0.0)

    def _store_font_size(self, points: float) -> None:
        self.window.settings.set("window.font_size", points)
        self.window.settings.save()
        self.apply_font_size()

    def apply_font_size(self) -> None:
        font = QApplication.font()
        font.setPointSizeF(self.font_points())
        QApplication.setFont(font)
        for tab in self.window.chat_tabs():
            tab.input.setFixedHeight(tab.input.fontMetrics().lineSpacing() * 4 + 16)

    # ------------------------------------------------------------ sidebar, panel, tabs

    def toggle_sidebar(self) -> None:
        self.window.sidebar.toggle()

    def search_chats(self) -> None:
        self.window.sidebar.set_visible(True)
        self.window.sidebar.sidebar.focus_search()

    def toggle_chat_panel(self) -> None:
        if (tab := self.window.current_tab()) is not None:
            tab.toggle_panel()

    def regenerate(self) -> None:
        if (tab := self.window.current_tab()) is not None:
            tab.regenerate()

    def focus_input(self) -> None:
        if (tab := self.window.current_tab()) is not None:
            tab.input.setFocus()

    def find_in_chat(self) -> None:
        if (tab := self.window.current_tab()) is not None:
            tab.find_in_chat()

    def copy_last_answer(self) -> None:
        tab = self.window.current_tab()
        answers = [card for card in tab.view.message_cards() if card.role == "assistant"] if tab else []
        if answers:
            answers[-1].copy_text()

    def rename_tab(self) -> None:
        self.window.tabs.start_rename(self.window.tabs.currentIndex())

    def show_shortcuts(self) -> None:
        from app.window.shortcuts import ShortcutsDialog

        parent = self.window if isinstance(self.window, QWidget) else None
        dialog = ShortcutsDialog(self.window.menuBar(), parent)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

"""Help > Keyboard shortcuts: every menu command with its keys, read from the menus themselves, and the
keys that live outside the menus (sending, tabs, the sidebar's list, code blocks)."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHeaderView, QMenu, QMenuBar, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

OTHER_KEYS: tuple[tuple[str, str, str], ...] = (
    ("Message", "Send", "Enter"),
    ("Message", "New line", "Shift+Enter"),
    ("Message", "Send while answering: queued, sent when the answer ends", "Enter"),
    ("Messages", "Previous / next message", "Alt+Up, Alt+Down"),
    ("Find in chat", "Next match", "Enter, F3"),
    ("Find in chat", "Previous match", "Shift+Enter, Shift+F3"),
    ("Find in chat", "Close", "Esc"),
    ("Tabs", "Next tab", "Ctrl+Tab, Ctrl+PgDown"),
    ("Tabs", "Previous tab", "Ctrl+Shift+Tab, Ctrl+PgUp"),
    ("Sidebar", "Open the selected chat", "Enter"),
    ("Sidebar", "Rename the selected chat", "F2"),
    ("Sidebar", "Delete the selected chat", "Delete"),
    ("Sidebar", "Pin, rename, export, delete", "Menu, Shift+F10"),
    ("Everywhere", "Next / previous control", "Tab, Shift+Tab"),
    ("Everywhere", "A menu", "Alt + its underlined letter"),
    ("Code block", "Scroll sideways", "Shift+wheel, arrow keys once clicked"),
)


def menu_shortcuts(menu_bar: QMenuBar) -> list[tuple[str, str, str]]:
    """(menu, command, keys) for every command in the menus, in menu order; keys "" where it has none."""
    rows = []
    for menu_action in menu_bar.actions():
        menu = menu_action.menu()
        if not isinstance(menu, QMenu):
            continue
        for action in menu.actions():
            if isinstance(action, QAction) and not action.isSeparator() and action.text():
                keys = ", ".join(sequence.toString(QKeySequence.SequenceFormat.NativeText) for sequence in action.shortcuts())
                rows.append((_plain(menu.title()), _plain(action.text()), keys))
    return rows


def _plain(text: str) -> str:
    return text.replace("&&", "\0").replace("&", "").replace("\0", "&")


class ShortcutsDialog(QDialog):
    """A table of every command and key."""

    def __init__(self, menu_bar: QMenuBar, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        self.resize(560, 560)
        self.rows = menu_shortcuts(menu_bar) + list(OTHER_KEYS)
        self.table = QTableWidget(len(self.rows), 3, self)
        self.table.setAccessibleName("Keyboard shortcuts")
        self.table.setHorizontalHeaderLabels(["Where", "Command", "Keys"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for row, values in enumerate(self.rows):
            for column, value in enumerate(values):
                self.table.setItem(row, column, QTableWidgetItem(value))
        self.table.resizeColumnToContents(0)
        self.table.resizeColumnToContents(2)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)

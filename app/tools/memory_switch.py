"""The per-chat memory switch: "Use memory in this chat" in the Chat menu, ticked for the chat shown.

Off, the chat is offered no memory tool and its prompt gets none of the notes (app/chat/tool_round.py);
the switch is stored with the chat in the history (chats.memory_off). It is greyed out while the memory
tool itself is off in Tools.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow, QMenu

from app.history.records import HistoryError
from app.tools.builtin import MEMORY, BuiltinTools

TEXT = "Use &memory in this chat"
TIP_OFF = "The memory tool is off (Model, Tools): no chat gets the notes."
TIP_ON = "Untick: this chat is offered no memory tool and its prompt gets none of the notes."


def add_memory_switch(window: QMainWindow, builtin: BuiltinTools, current_chat: Callable[[], str]) -> QAction:
    """The checkable action, put in the Chat menu after its last item before the first separator."""
    menu = next(action.menu() for action in window.menuBar().actions() if action.text() == "&Chat")
    assert isinstance(menu, QMenu)
    switch = QAction(TEXT, menu)
    switch.setCheckable(True)
    separator = next((action for action in menu.actions() if action.isSeparator()), None)
    menu.insertAction(separator, switch) if separator is not None else menu.addAction(switch)

    def refresh() -> None:
        chat_id, on = current_chat(), builtin.is_enabled(MEMORY)
        switch.setEnabled(on and bool(chat_id))
        switch.setToolTip(TIP_ON if on else TIP_OFF)
        switch.setChecked(on and bool(chat_id) and not builtin.memory_off(chat_id))

    def toggled(checked: bool) -> None:
        chat_id = current_chat()
        if chat_id and switch.isEnabled():
            try:
                builtin.set_memory_off(chat_id, not checked)
            except HistoryError:
                refresh()

    menu.aboutToShow.connect(refresh)
    switch.triggered.connect(toggled)
    refresh()
    return switch

"""Opening Compare from the window: one comparison at a time, a stored one from the sidebar, and a
pane continued as a normal chat.

The dialog itself (its panes, their models, storing the comparison) is app/window/compare.py; this
is what the window does around it, so Compare's wiring changes here and not in the window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QWidget

from app.bridge import ChatMessage, EngineBridge
from app.chat.answering_tab import Defaults
from app.chat.compare_pane import ComparePane
from app.chat.tab import ChatTab
from app.history.sync import HistoryUI
from app.window.tab_models import TabModels

if TYPE_CHECKING:
    from app.history.records import ChatSnapshot
    from app.window.compare import CompareDialog

NewChat = Callable[..., ChatTab]  # the window's new_chat(messages=...)


class CompareLauncher(QObject):
    """The window's Compare dialog (`dialog`, None while none is open)."""

    def __init__(self, bridge: EngineBridge, tab_models: TabModels, defaults: Defaults, panes: dict[str, ComparePane],
                 history: HistoryUI, new_chat: NewChat, refresh_sidebar: Callable[[], None], window: QWidget) -> None:
        super().__init__(window)
        self._bridge, self._tab_models, self._defaults, self._panes = bridge, tab_models, defaults, panes
        self._history, self._new_chat, self._refresh_sidebar, self._window = history, new_chat, refresh_sidebar, window
        self.dialog: CompareDialog | None = None

    def open(self, tab: ChatTab | None) -> None:
        """The same message to several models side by side, starting from `tab`'s model (None: the window's)."""
        from app.window.compare import CompareDialog

        first = self._tab_models.path_of(tab) if tab is not None else self._tab_models.default_path()
        others = [path for path in self._bridge.loaded_models if path != first]
        if self.dialog is not None:
            self.dialog.close()  # one comparison at a time (it stays stored)
        dialog = CompareDialog(self._bridge, self._tab_models, self._defaults, self._panes,
                               [path for path in [first, *others[:1]] if path], self._window, self._history.client)
        dialog.continue_requested.connect(self.continue_compared)
        dialog.stored.connect(self._refresh_sidebar)
        dialog.destroyed.connect(lambda: setattr(self, "dialog", None) if self.dialog is dialog else None)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.dialog = dialog
        dialog.show()

    def open_stored(self, snapshot: ChatSnapshot, tab: ChatTab | None) -> None:
        """A stored comparison (chosen in the sidebar), in Compare with its panes."""
        self.open(tab)
        if self.dialog is not None:
            self.dialog.restore(snapshot)

    def continue_compared(self, path: str, messages: Sequence[ChatMessage]) -> ChatTab:
        """One Compare pane as a normal chat: its question and answer, on its model, stored like any chat."""
        tab = self._new_chat(messages=messages)
        tab.choose_model(path)
        self._history.store_conversation(tab)
        return tab

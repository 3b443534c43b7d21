"""The sidebar beside the tabs: a splitter, Ctrl+B to show or hide it, its width and visibility remembered.

Both live in the settings (window.sidebar_visible, window.sidebar_width); a drag
of the splitter is saved once it has rested for a moment, not at every pixel.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QBoxLayout, QSplitter, QWidget

from app.chat.tab import ChatTab
from app.history.sidebar import Sidebar
from app.history.sync import HistoryUI
from app.settings.store import Settings

SAVE_DELAY_MS = 500
MIN_WIDTH = 140


class SidebarControl(QObject):
    """Puts a Sidebar left of `content` inside `layout`; `toggle()` shows or hides it."""

    def __init__(self, history: HistoryUI, settings: Settings, layout: QBoxLayout, content: QWidget,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.settings = settings
        self.sidebar = Sidebar(history)
        self.sidebar.setMinimumWidth(MIN_WIDTH)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("sidebarSplitter")
        self.splitter.setChildrenCollapsible(False)
        layout.replaceWidget(content, self.splitter)
        self.splitter.addWidget(self.sidebar)
        self.splitter.addWidget(content)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        width = max(MIN_WIDTH, int(settings.get("window.sidebar_width")))
        self.splitter.setSizes([width, max(400, 1000 - width)])
        self.sidebar.setVisible(bool(settings.get("window.sidebar_visible")))
        self._save_timer = QTimer(self, singleShot=True, interval=SAVE_DELAY_MS)
        self._save_timer.timeout.connect(self.save)
        self.splitter.splitterMoved.connect(lambda *_: self._save_timer.start())

    @property
    def visible(self) -> bool:
        return not self.sidebar.isHidden()

    def attach(self, tab: ChatTab) -> None:
        self.sidebar.attach(tab)

    def toggle(self) -> None:
        self.set_visible(not self.visible)

    def set_visible(self, visible: bool) -> None:
        self.sidebar.setVisible(visible)
        if visible:
            self.sidebar.refresh()
        self.save()

    def save(self) -> None:
        self._save_timer.stop()
        self.settings.set("window.sidebar_visible", self.visible)
        if self.visible and self.sidebar.width() >= MIN_WIDTH:
            self.settings.set("window.sidebar_width", self.sidebar.width())
        self.settings.save()

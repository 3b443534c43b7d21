"""The settings dialog's pages: a list of page names on the left, one scrollable page at a time on the right.

All the settings in one column were ~1,000 px tall; on a 1366x768 or 1280x720 screen part of them could
not be reached. Here each page scrolls on its own when the window is shorter than it, and `reveal` turns
to the page that holds a widget and scrolls it into view (a problem to fix, a test of every control).
`fit_size` picks the dialog's size for a screen: what the pages want, no more than the screen gives.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QListWidget,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

DECORATIONS = QSize(16, 40)  # a window manager's frame and title bar, which the available geometry still holds


class _Page(QScrollArea):
    """A page that asks for room for all of its content (QScrollArea's own hint stops at ~24 lines)."""

    def sizeHint(self) -> QSize:
        content = self.widget()
        if content is None:
            return super().sizeHint()
        bar = self.style().pixelMetric(self.style().PixelMetric.PM_ScrollBarExtent)
        return content.sizeHint() + QSize(bar + 2 * self.frameWidth(), 2 * self.frameWidth())


class SettingsPages(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.names = QListWidget()
        self.names.setAccessibleName("Settings pages")
        self.names.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.names.setSpacing(3)
        self.stack = QStackedWidget()
        self.names.currentRowChanged.connect(self.stack.setCurrentIndex)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.names)
        layout.addWidget(self.stack, 1)

    def add_page(self, name: str, *widgets: QWidget, stretch_first: bool = False) -> QScrollArea:
        """A page of `widgets` one under the other; `stretch_first` gives the first one the spare height."""
        content = QWidget()
        column = QVBoxLayout(content)
        for index, widget in enumerate(widgets):
            column.addWidget(widget, 1 if stretch_first and index == 0 else 0)
        if not stretch_first:
            column.addStretch(1)
        scroll = _Page()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(content)
        self.stack.addWidget(scroll)
        self.names.addItem(name)
        self.names.setFixedWidth(self._names_width())
        if self.names.currentRow() < 0:
            self.names.setCurrentRow(0)
        return scroll

    def _names_width(self) -> int:
        metrics = self.names.fontMetrics()
        widest = max(metrics.horizontalAdvance(self.names.item(row).text()) for row in range(self.names.count()))
        return widest + 40  # the item's padding and the frame

    def page_names(self) -> list[str]:
        return [self.names.item(row).text() for row in range(self.names.count())]

    def show_page(self, index: int) -> None:
        self.names.setCurrentRow(index)

    def set_page_hidden(self, index: int, hidden: bool) -> None:
        """A page with nothing to set (the device of a remote server) leaves the list; a shown one stays."""
        self.names.item(index).setHidden(hidden)
        if hidden and self.names.currentRow() == index:
            self.show_page(0)

    def page_of(self, widget: QWidget) -> int:
        """The index of the page that holds `widget`, or -1."""
        for index in range(self.stack.count()):
            page = self.stack.widget(index)
            if page is not None and page.isAncestorOf(widget):
                return index
        return -1

    def reveal(self, widget: QWidget) -> None:
        """Turn to the page that holds `widget` and scroll it into view."""
        index = self.page_of(widget)
        if index < 0:
            return
        self.show_page(index)
        scroll = self.stack.widget(index)
        content = scroll.widget() if isinstance(scroll, QScrollArea) else None
        if isinstance(scroll, QScrollArea) and content is not None:
            # the whole widget: ensureWidgetVisible would settle for a list's current row or an edit's cursor
            center = widget.mapTo(content, widget.rect().center())
            scroll.ensureVisible(center.x(), center.y(), widget.width() // 2 + 10, widget.height() // 2 + 10)

def fit_size(wanted: QSize, available: QRect) -> QSize:
    """`wanted`, cut to what a screen's available geometry leaves once the window's frame is drawn."""
    room = available.size() - DECORATIONS
    return wanted.boundedTo(room)

"""The tab strip: movable tabs, a "+" button, rename in place, a spinner on answering tabs."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPen, QPixmap
from PySide6.QtWidgets import QLineEdit, QTabWidget, QToolButton, QWidget

SPINNER_FRAMES = 12
SPINNER_INTERVAL_MS = 80


def _spinner_frame(step: int, color: QColor, size: int = 16) -> QIcon:
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    pen = QPen(color, 2.2)
    pen.setCapStyle(Qt.PenCapStyle.RoundCap)
    painter.setPen(pen)
    start = -step * (360 // SPINNER_FRAMES) * 16  # Qt angles are 1/16 degree
    painter.drawArc(QRectF(3, 3, size - 6, size - 6), start, 270 * 16)
    painter.end()
    return QIcon(pixmap)


class ChatTabWidget(QTabWidget):
    """Tabs of chats; tells the window when the user asks for a new one or renames one."""

    new_tab_requested = Signal()
    tab_renamed = Signal(int, str)  # index, new title

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setMovable(True)
        self.setTabsClosable(True)
        self.setDocumentMode(True)
        self.setElideMode(Qt.TextElideMode.ElideRight)
        self.setUsesScrollButtons(True)
        self.add_button = QToolButton(self)
        self.add_button.setText("+")
        self.add_button.setAutoRaise(True)
        self.add_button.setToolTip("New chat (Ctrl+T)")
        self.add_button.setAccessibleName("New chat")
        self.add_button.clicked.connect(self.new_tab_requested)
        self.setCornerWidget(self.add_button, Qt.Corner.TopRightCorner)
        self.tabBar().tabBarDoubleClicked.connect(self.start_rename)
        self.rename_editor: QLineEdit | None = None
        self._frames: list[QIcon] = []
        self._step = 0
        self._busy: set[QWidget] = set()
        self._spinner = QTimer(self, interval=SPINNER_INTERVAL_MS)
        self._spinner.timeout.connect(self._advance_spinner)

    def tabInserted(self, index: int) -> None:  # noqa: N802 - Qt override
        super().tabInserted(index)
        close = self.tabBar().tabButton(index, self.tabBar().ButtonPosition.RightSide)
        if close is not None:
            close.setAccessibleName("Close chat")  # Qt's close button says nothing on its own

    # ------------------------------------------------------------ answering indicator

    def set_busy(self, page: QWidget, busy: bool) -> None:
        """Show a spinner on this page's tab while it is answering."""
        if busy:
            self._busy.add(page)
        else:
            self._busy.discard(page)
            index = self.indexOf(page)
            if index >= 0:
                self.setTabIcon(index, QIcon())
        if self._busy and not self._spinner.isActive():
            self._spinner.start()
            self._advance_spinner()
        elif not self._busy:
            self._spinner.stop()

    def is_busy(self, page: QWidget) -> bool:
        return page in self._busy

    def _advance_spinner(self) -> None:
        if not self._frames:
            color = self.palette().color(self.palette().ColorRole.Highlight)
            self._frames = [_spinner_frame(step, color) for step in range(SPINNER_FRAMES)]
        self._step = (self._step + 1) % SPINNER_FRAMES
        for page in list(self._busy):
            index = self.indexOf(page)
            if index < 0:
                self._busy.discard(page)  # its tab was closed while answering
            else:
                self.setTabIcon(index, self._frames[self._step])

    # ------------------------------------------------------------ rename in place

    def start_rename(self, index: int) -> None:
        """A line edit over the tab; Enter keeps the new name, Esc or focus loss cancels."""
        if index < 0:
            return
        self.finish_rename(False)
        bar = self.tabBar()
        editor = QLineEdit(self.tabText(index), bar)
        editor.setGeometry(bar.tabRect(index).adjusted(2, 2, -2, -2))
        editor.selectAll()
        editor.returnPressed.connect(lambda: self.finish_rename(True))
        editor.editingFinished.connect(lambda: self.finish_rename(False))
        editor.setProperty("tabPage", self.widget(index))
        self.rename_editor = editor
        editor.show()
        editor.setFocus()

    def finish_rename(self, accept: bool) -> None:
        editor, self.rename_editor = self.rename_editor, None
        if editor is None:
            return
        index = self.indexOf(editor.property("tabPage"))
        title = " ".join(editor.text().split())
        editor.hide()
        editor.deleteLater()
        if accept and title and index >= 0:
            self.setTabText(index, title)
            self.tab_renamed.emit(index, title)

    def changeEvent(self, event) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._frames = []  # redraw the spinner in the new highlight colour

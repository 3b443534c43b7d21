"""Find in chat (Ctrl+F): a bar over the transcript that highlights every match and steps through them.

Typing searches as you type; Enter / F3 go to the next match, Shift+Enter / Shift+F3 to the
previous one, wrapping around; "3 of 12" says where you are. Every match is highlighted, the
current one in a stronger colour, and the transcript scrolls to it. Esc closes the bar and
clears the highlights. While an answer streams, its new matches are counted twice a second.
The first match shown is the first one at or below the top of what the reader sees, so finding
never throws them back to the start of a long chat.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QTextBrowser,
    QToolButton,
    QWidget,
)

from app.chat.message_list import MessageCard, MessageList
from app.chat.transcript_search import Match, clear_highlights, find_matches, highlight

SCROLL_MARGIN_PX = 60  # the current match is never flush with the view's edge
LIVE_REFRESH_MS = 500  # while an answer streams, its new matches are counted this often


class FindField(QLineEdit):
    """The search text: Enter / Shift+Enter step, Esc closes (before the window's Esc, Stop, sees it)."""

    step_requested = Signal(int)
    close_requested = Signal()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) \
                and event.key() in (Qt.Key.Key_Escape, Qt.Key.Key_Return, Qt.Key.Key_Enter):
            event.accept()  # ours, not a menu shortcut's
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.step_requested.emit(-1 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1)
        elif event.key() == Qt.Key.Key_Escape:
            self.close_requested.emit()
        else:
            super().keyPressEvent(event)


class FindBar(QFrame):
    """The find bar of one chat tab; `host` is the tab (F3 works anywhere in it)."""

    closed = Signal()

    def __init__(self, view: MessageList, host: QWidget) -> None:
        super().__init__(host)
        self.setObjectName("findBar")  # styled in resources/style.qss
        self.view = view
        self.matches: list[Match] = []
        self.current = -1
        self._marked: set[QTextBrowser] = set()
        self._live = QTimer(self, interval=LIVE_REFRESH_MS)
        self._live.timeout.connect(self.refresh)
        self.field = FindField(self)
        self.field.setPlaceholderText("Find in chat")
        self.field.setAccessibleName("Find in chat")
        self.field.setClearButtonEnabled(True)
        self.field.textChanged.connect(self._on_text_changed)
        self.field.step_requested.connect(self.step)
        self.field.close_requested.connect(self.dismiss)
        self.count_label = QLabel(self)
        self.count_label.setAccessibleName("Matches")
        self.count_label.setMinimumWidth(self.count_label.fontMetrics().horizontalAdvance("No matches") + 8)
        self.case_box = QCheckBox("Match case", self)
        self.case_box.setToolTip("Only matches with the same capital and small letters")
        self.case_box.toggled.connect(self.search)
        self.previous_button = self._button("↑", "Previous match", "Previous match (Shift+Enter, Shift+F3)", -1)
        self.next_button = self._button("↓", "Next match", "Next match (Enter, F3)", 1)
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setAutoRaise(True)
        self.close_button.setAccessibleName("Close find")
        self.close_button.setToolTip("Close (Esc)")
        self.close_button.clicked.connect(self.dismiss)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(12, 4, 12, 4)
        for widget in (self.field, self.count_label, self.previous_button, self.next_button, self.case_box):
            layout.addWidget(widget)
        layout.addStretch(1)
        layout.addWidget(self.close_button)
        self.field.setMinimumWidth(220)
        for keys, step in (("F3", 1), ("Shift+F3", -1)):
            shortcut = QShortcut(QKeySequence(keys), host, context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
            shortcut.activated.connect(lambda step=step: self._on_find_again(step))
        self.hide()

    def _button(self, text: str, name: str, tip: str, step: int) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setAccessibleName(name)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.clicked.connect(lambda: self.step(step))
        return button

    # ------------------------------------------------------------ what the tab and the keys call

    def open(self) -> None:
        """Show the bar with its text selected (Ctrl+F again selects it for a new search)."""
        self.show()
        self.field.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.field.selectAll()
        self.search()

    def dismiss(self) -> None:
        self.hide()
        for browser in self._marked:
            clear_highlights(browser)
        self._marked, self.matches, self.current = set(), [], -1
        self.closed.emit()

    def search(self) -> None:
        """Find the field's text again from scratch; the current match is the first one in view or below."""
        self.matches = find_matches(self.view, self.field.text(), self.case_box.isChecked())
        self.current = self._first_in_view() if self.matches else -1
        self._show_current()

    def refresh(self) -> None:
        """The transcript changed (an answer ended, a message was deleted): match again, staying near the same place."""
        if not self.isVisible():
            return
        current = self.current
        self.matches = find_matches(self.view, self.field.text(), self.case_box.isChecked())
        self.current = min(current, len(self.matches) - 1) if self.matches else -1
        self._show_current(scroll=False)

    def set_live(self, streaming: bool) -> None:
        """While the chat answers, match again every so often: the streaming answer's text changes."""
        if streaming:
            self._live.start()
        else:
            self._live.stop()
            self.refresh()

    def step(self, step: int) -> None:
        if self.matches:
            self.current = (self.current + step) % len(self.matches)
            self._show_current()

    def current_card(self) -> MessageCard | None:
        return self.matches[self.current].card if self.matches else None

    def count_text(self) -> str:
        if not self.field.text():
            return ""
        return f"{self.current + 1} of {len(self.matches)}" if self.matches else "No matches"

    # ------------------------------------------------------------ internals

    def _on_text_changed(self, _text: str) -> None:
        self.search()

    def _on_find_again(self, step: int) -> None:
        if not self.isVisible():
            self.open()
        else:
            self.step(step)

    def _show_current(self, scroll: bool = True) -> None:
        self._marked = highlight(self.matches, self.current, self._marked)
        text = self.count_text()
        self.count_label.setText(text)
        self.field.setAccessibleDescription(text)
        self.count_label.setProperty("role", "error" if text == "No matches" else "hint")
        self.count_label.style().polish(self.count_label)
        for button in (self.previous_button, self.next_button):
            button.setEnabled(len(self.matches) > 1)
        if scroll and self.matches:
            self._scroll_to(self.matches[self.current])

    def _match_y(self, match: Match) -> int:
        """Where a match is in the transcript's content, in pixels from its top."""
        if not self.view.window_.is_laid_out(match.card):  # far from the view: its card's top is near enough
            return self.view.top_of(match.card)
        rect, content = match.browser.cursorRect(match.cursor), self.view.widget()
        return match.browser.viewport().mapTo(content, QPoint(0, rect.top())).y() if content is not None else 0

    def _first_in_view(self) -> int:
        top = self.view.verticalScrollBar().value()
        return next((index for index, match in enumerate(self.matches) if self._match_y(match) >= top), 0)

    def _scroll_to(self, match: Match) -> None:
        self.view.reveal(match.card)  # laid out where it belongs, so the match has its true place
        cursor = match.browser.textCursor()
        cursor.setPosition(match.cursor.selectionStart())
        if match.browser.horizontalScrollBar().maximum() > 0:  # a code block that scrolls sideways
            match.browser.setTextCursor(cursor)
            match.browser.ensureCursorVisible()
        self.view.ensureVisible(0, self._match_y(match), 0, SCROLL_MARGIN_PX)

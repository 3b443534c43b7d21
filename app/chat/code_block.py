"""One fenced code block of a message: its language, Wrap and Copy, and code that scrolls sideways.

A long line is never cut off at the card's edge: the code view does not wrap
(unless Wrap is on) and shows a horizontal scroll bar when a line is wider than
the card. Vertical wheel turns go to the message list (a card never scrolls
vertically); sideways turns, or Shift+wheel, scroll the code.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QGuiApplication, QTextOption, QWheelEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QTextBrowser, QToolButton, QVBoxLayout, QWidget

from app.chat.markdown_view import code_background, code_html, palette_is_dark, text_style_sheet

COPIED_FEEDBACK_MS = 1500


class CodeView(QTextBrowser):
    """The highlighted code: as tall as its lines, as wide as the card, scrolling sideways."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setOpenLinks(False)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setLineWrapMode(QTextBrowser.LineWrapMode.NoWrap)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.document().setDocumentMargin(6)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self.horizontalScrollBar().rangeChanged.connect(self._fit_height)

    def set_wrapped(self, wrapped: bool) -> None:
        mode = QTextBrowser.LineWrapMode.WidgetWidth if wrapped else QTextBrowser.LineWrapMode.NoWrap
        self.setLineWrapMode(mode)

    def loadResource(self, kind: int, url: QUrl | str) -> object:  # noqa: N802 - Qt override
        return None  # code is text: nothing in it is ever loaded

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt override
        delta = event.angleDelta()
        sideways = abs(delta.x()) > abs(delta.y()) or event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        if sideways and self.horizontalScrollBar().maximum() > 0:
            super().wheelEvent(event)
        else:
            event.ignore()  # the message list scrolls

    def _fit_height(self) -> None:
        bar = self.horizontalScrollBar()
        scrollbar = bar.sizeHint().height() if bar.maximum() > 0 else 0
        height = int(self.document().size().height()) + 2 * self.frameWidth() + scrollbar
        if height != self.height():
            self.setFixedHeight(height)


class CodeBlock(QFrame):
    """Header (language, Wrap, Copy) over a CodeView; `copied` carries the exact code."""

    copied = Signal(str)

    def __init__(self, code: str = "", language: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("codeBlock")
        self.code, self.language = "", ""
        self._dark: bool | None = None  # the palette kind the colours were set for
        self.language_label = QLabel()
        self.language_label.setObjectName("codeLanguage")
        self.wrap_button = self._button("Wrap", "Wrap long lines (otherwise they scroll sideways)")
        self.wrap_button.setCheckable(True)
        self.wrap_button.toggled.connect(self._on_wrap_toggled)
        self.copy_button = self._button("Copy", "Copy this code")
        self.copy_button.clicked.connect(self.copy)
        self.view = CodeView(self)
        header = QHBoxLayout()
        header.setContentsMargins(8, 2, 4, 0)
        header.addWidget(self.language_label)
        header.addStretch(1)
        header.addWidget(self.wrap_button)
        header.addWidget(self.copy_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(header)
        layout.addWidget(self.view)
        self._apply_palette()
        self.set_code(code, language)

    def _button(self, text: str, tip: str) -> QToolButton:
        button = QToolButton(self)
        button.setText(text)
        button.setToolTip(tip)
        button.setAccessibleName(tip)
        button.setAutoRaise(True)
        return button

    def set_code(self, code: str, language: str = "") -> None:
        """Show new code (a streaming block grows); the sideways scroll position stays."""
        if code == self.code and language == self.language:
            return
        self.code, self.language = code, language
        self.language_label.setText(language or "code")
        self.view.setAccessibleName(f"Code block, {language}" if language else "Code block")
        self._render()

    def _render(self) -> None:
        scroll = self.view.horizontalScrollBar().value()
        self.view.setHtml(code_html(self.code, self.language, palette_is_dark(), self.wrap_button.isChecked()))
        self.view.horizontalScrollBar().setValue(scroll)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.code)
        self.copy_button.setText("Copied")
        QTimer.singleShot(COPIED_FEEDBACK_MS, self, lambda: self.copy_button.setText("Copy"))
        self.copied.emit(self.code)

    def _on_wrap_toggled(self, wrapped: bool) -> None:
        self.view.set_wrapped(wrapped)
        self._render()

    def changeEvent(self, event: object) -> None:  # noqa: N802 - Qt override
        super().changeEvent(event)  # type: ignore[arg-type]
        # Only a switch between light and dark: setting the style sheet sends change events itself.
        if event.type() == event.Type.PaletteChange and palette_is_dark() != self._dark:  # type: ignore[attr-defined]
            self._apply_palette()
            self._render()

    def _apply_palette(self) -> None:
        dark = self._dark = palette_is_dark()
        background = code_background(dark)
        self.setStyleSheet(
            f"QFrame#codeBlock {{ background: {background}; border-radius: 6px; }}"
            f" QTextBrowser {{ background: {background}; }}"
            " QLabel#codeLanguage { color: #888888; }"
        )
        self.view.document().setDefaultStyleSheet(text_style_sheet(self.palette(), dark))

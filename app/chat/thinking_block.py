"""The folded "Thinking" part of an answer: what a reasoning model thought before answering, kept apart.

Folded by default; a click on its header opens it. While the thinking streams the header counts the
seconds ("Thinking… 12 s"); once the answer starts or the turn ends it says what it took ("Thought
for 12 s, 340 tokens"). The body is plain text, filled only while it is open, so a long thinking
costs no layout at all while folded (the tab hands over the whole text on every ~30 ms tick).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QSizePolicy, QToolButton, QVBoxLayout, QWidget

FOLD_TIP = "Show or hide what the model thought before answering (Copy copies the answer alone)"


def duration_text(seconds: float) -> str:
    """12 s, 2 min 5 s, under a second: as precise as a person reads a duration."""
    if seconds < 0.5:
        return "under a second"
    whole = round(seconds)
    return f"{whole} s" if whole < 60 else f"{whole // 60} min {whole % 60} s"


def thinking_summary(seconds: float, tokens: int, interrupted: bool = False) -> str:
    """The header once the thinking is over; what the turn did not measure is left out."""
    if seconds <= 0 and tokens <= 0:
        return "Thinking (cut short)" if interrupted else "Thinking"
    counted = f"{tokens} token{'s' if tokens != 1 else ''}"
    if seconds <= 0:
        return f"Thought: {counted}"
    return f"Thought for {duration_text(seconds)}" + (f", {counted}" if tokens > 0 else "")


class ThinkingBlock(QWidget):
    """A header that folds and unfolds, and the thinking's text under it; hidden while there is none."""

    toggled = Signal(bool)  # opened / folded by the reader

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("thinkingBlock")  # styled in resources/style.qss
        self.streaming = False
        self._text = ""
        self.toggle = QToolButton(self)
        self.toggle.setObjectName("thinkingToggle")
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolTip(FOLD_TIP)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setText("Thinking")
        self.toggle.toggled.connect(self._on_toggled)
        self.body = QLabel(self)
        self.body.setObjectName("thinkingText")
        self.body.setProperty("role", "hint")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Minimum)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.body)
        self.body.hide()
        self.hide()

    @property
    def is_open(self) -> bool:
        return self.toggle.isChecked()

    def text(self) -> str:
        return self._text

    def header(self) -> str:
        return self.toggle.text()

    def set_text(self, text: str) -> None:
        """The whole thinking so far; the block shows once there is any."""
        self._text = text.strip()
        self.setVisible(bool(self._text))
        if self.is_open:
            self._fill_body()

    def show_streaming(self, seconds: float) -> None:
        """The model is thinking now, for `seconds` so far."""
        self.streaming = True
        self._set_header(f"Thinking… {int(seconds)} s")

    def finish(self, seconds: float, tokens: int = 0, interrupted: bool = False) -> None:
        """The thinking is over: how long it took and how many tokens (0: not known)."""
        self.streaming = False
        self._set_header(thinking_summary(seconds, tokens, interrupted))

    def _set_header(self, text: str) -> None:
        if self.toggle.text() != text:  # once a second while streaming, not once a tick
            self.toggle.setText(text)

    def _fill_body(self) -> None:
        if self.body.text() != self._text:
            self.body.setText(self._text)
        self.body.setVisible(bool(self._text))

    def _on_toggled(self, opened: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if opened else Qt.ArrowType.RightArrow)
        if opened:
            self._fill_body()
        else:
            self.body.hide()
        self.toggled.emit(opened)

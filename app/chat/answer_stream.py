"""The answer streaming into a tab: tokens and thinking buffered, painted on a ~30 ms tick.

Tokens arrive hundreds per second across tabs and are only buffered here; a timer moves them into
the answer card, so a fast model costs one repaint per tick, not one per token. A tab that is not
visible keeps its buffer and paints when it is shown again. A reasoning model's thinking streams into
the same card's folded Thinking block on the same tick (app/chat/thinking_stream.py).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer
from PySide6.QtWidgets import QWidget

from app.chat.message_list import MessageCard
from app.chat.thinking_stream import ThinkingStream

FLUSH_INTERVAL_MS = 30


class AnswerStream(QObject):
    """The answer of one tab's turn under way: `begin` it with its card, `take_card` when it ends."""

    def __init__(self, tab: QWidget) -> None:
        super().__init__(tab)
        self._tab = tab  # painted only while the tab is visible
        self.thinking = ThinkingStream()
        self.card: MessageCard | None = None
        self.text = ""  # the answer as the card shows it (what the ticks have moved so far)
        self._pending: list[str] = []
        self._dirty = False
        self._thinking_dirty = False
        self._timer = QTimer(self, interval=FLUSH_INTERVAL_MS)
        self._timer.timeout.connect(self.flush)

    @property
    def streamed_text(self) -> str:
        """The answer including what the next tick will show."""
        return self.text + "".join(self._pending)

    def begin(self, card: MessageCard) -> None:
        """A new turn's answer goes into `card`; what the last turn left behind is dropped."""
        self._pending.clear()
        self.text = ""
        self.thinking.reset()
        self.card = card

    def take_card(self) -> MessageCard | None:
        """The answer's card, which the stream no longer paints (the turn ended)."""
        card, self.card = self.card, None
        return card

    def set_running(self, running: bool) -> None:
        """Tick while the tab is answering, not otherwise."""
        if running:
            self._timer.start()
        else:
            self._timer.stop()

    def on_token(self, text: str) -> None:
        self.thinking.answer_started()
        self._pending.append(text)

    def on_reasoning(self, text: str) -> None:
        self.thinking.append(text)

    def flush(self) -> None:
        """Move what arrived into the card, if the tab is visible (else it waits in the buffer)."""
        self._thinking_dirty |= self.thinking.flush()
        if self._pending:
            self.text += "".join(self._pending)
            self._pending.clear()
            self._dirty = True
        if not self._tab.isVisible() or self.card is None:
            return
        if self._dirty:
            self.card.set_text(self.text or ("…" if self.thinking.text else ""))
            self._dirty = False
        if self._thinking_dirty or self.thinking.thinking:  # the seconds count on while it thinks
            self.thinking.show(self.card.thinking_block)
            self._thinking_dirty = False

"""Answer aloud: a tab's switch that speaks each answer while it streams, starting once its first sentence is whole.

The answer's text is read from the tab every TICK_MS while it answers (the same coalescing the view
does: tokens come hundreds a second) and what is new goes to the reading's queue; the read-aloud
worker cuts it into sentences and speaks each as soon as it ends. When the answer finishes, the
rest of its text ends the queue. Stop stops the voice too (the tab calls ReadAloud.stop).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator

from PySide6.QtCore import QObject, QTimer, SignalInstance
from PySide6.QtWidgets import QToolButton, QWidget

from app.voice.read_aloud import ReadAloud

TICK_MS = 100
WAIT_S = 0.1  # how often the worker, waiting for text, looks whether the reading was stopped


def _pieces(pending: queue.Queue[str | None], stop: threading.Event) -> Iterator[str]:
    while not stop.is_set():
        try:
            piece = pending.get(timeout=WAIT_S)
        except queue.Empty:
            continue
        if piece is None:
            return
        yield piece


class AnswerAloud(QObject):
    def __init__(self, reader: ReadAloud, streamed_text: Callable[[], str], final_text: Callable[[], str],
                 answering_changed: SignalInstance, parent: QWidget) -> None:
        super().__init__(parent)
        self._reader, self._streamed_text, self._final_text = reader, streamed_text, final_text
        self.switch = QToolButton(parent)
        self.switch.setText("Answer aloud")
        self.switch.setCheckable(True)
        self.switch.setToolTip("Speak each answer while it is written, from its first sentence on (the voice of "
                               "Settings > Voice)")
        self._pending: queue.Queue[str | None] | None = None
        self._fed = ""
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_MS)
        self._timer.timeout.connect(self._on_tick)
        answering_changed.connect(self._on_answering_changed)

    def _on_answering_changed(self, answering: bool) -> None:
        if answering and self.switch.isChecked():
            pending: queue.Queue[str | None] = queue.Queue()
            if self._reader.begin(lambda stop: _pieces(pending, stop)):
                self._pending, self._fed = pending, ""
                self._timer.start()
        elif not answering and self._pending is not None:
            self._timer.stop()
            self._feed(self._final_text())
            self._pending.put(None)
            self._pending = None

    def say(self, text: str) -> None:
        """Speak `text` after what the answer said so far, where this answer is being read (a tool call that
        waits for the person: in a spoken conversation nobody may be looking at the screen)."""
        if self._pending is None:
            return
        self._feed(self._streamed_text())
        self._pending.put(f"\n\n{text}\n\n")

    def _on_tick(self) -> None:
        self._feed(self._streamed_text())

    def _feed(self, text: str) -> None:
        if self._pending is None:
            return
        if not text.startswith(self._fed):  # a new answer card (after tool results): its text starts over
            self._fed = ""
        if len(text) > len(self._fed):
            self._pending.put(text[len(self._fed):])
            self._fed = text

"""The GUI probe's long chat: thousands of messages written through the history store, opened from
the history in the real window and scrolled through.

Opening is timed from asking the history for the chat to its tab being on screen with its cards
laid out; only the last few messages become cards then (app/chat/message_list.py), the rest when
the reader scrolls up to them. Scrolling moves the scroll bar up one step on every tick of a 16 ms
timer (a fast flick, which keeps reaching the top and so keeps making earlier cards), and notes how
late each tick came: a late tick is a frame the reader waited for.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from app.bridge import ChatMessage

TICK_MS = 16  # one frame at 60 Hz
SCROLL_STEP_PX = 120  # one wheel notch of three lines is ~60 px: this is a fast flick
OPEN_TIMEOUT_S = 120.0


def write_long_chat(messages: Sequence[ChatMessage], path: str | Path | None = None) -> str:
    """The messages as one stored chat, not open in a tab (the default history file unless `path`); its id."""
    from app.history.store import HistoryStore

    store = HistoryStore.open(path)
    try:
        chat = store.create_chat("A long chat", open_tab=False)
        parent: str | None = None
        for message in messages:
            parent = store.add_message(chat.id, message.role, message.content, parent).id
        return chat.id
    finally:
        store.close()


def open_from_history(window: Any, application: Any, chat_id: str) -> tuple[float, Any]:
    """Seconds from asking the history for the chat to its tab shown and laid out, and the tab."""
    started = time.perf_counter()
    window.history_ui.open_chat(chat_id)
    deadline = started + OPEN_TIMEOUT_S
    while not _shown(window, chat_id):
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the long chat did not open within {OPEN_TIMEOUT_S:g} s")
        application.processEvents()
    application.processEvents()  # laid out and painted once
    tab = window.current_tab()
    tab.view.verticalScrollBar().maximum()
    return time.perf_counter() - started, tab


def _shown(window: Any, chat_id: str) -> bool:
    tab = window.current_tab()
    return tab is not None and tab.chat_id == chat_id and bool(tab.view.cards())


class ScrollDriver:
    """Moves a scroll bar up a step on each tick of a precise 16 ms timer; notes each tick's lateness in ms."""

    def __init__(self, view: Any, ticks: int) -> None:
        from PySide6.QtCore import QEventLoop, Qt, QTimer

        self.view, self.ticks = view, ticks
        self.lateness_ms: list[float] = []
        self.most_laid_out = 0  # the most cards laid out at once (the transcript lays out those near the view)
        self.loop = QEventLoop()
        self._last = 0.0
        self._timer = QTimer(interval=TICK_MS)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._on_tick)

    def run(self) -> list[float]:
        self._last = time.perf_counter()
        self._timer.start()
        self.loop.exec()
        return self.lateness_ms

    def _on_tick(self) -> None:
        now = time.perf_counter()
        self.lateness_ms.append(max(0.0, (now - self._last) * 1000 - TICK_MS))
        self._last = now
        self.most_laid_out = max(self.most_laid_out, self.view.window_.laid_out_count())
        if len(self.lateness_ms) >= self.ticks:
            self._timer.stop()
            self.loop.quit()
            return
        bar = self.view.verticalScrollBar()
        bar.setValue(max(0, bar.value() - SCROLL_STEP_PX))


def measure_long_chat(window: Any, application: Any, chat_id: str, ticks: int) -> dict[str, Any]:
    """Open the stored chat, then scroll up through it for `ticks` ticks: seconds, card counts, lateness."""
    open_s, tab = open_from_history(window, application, chat_id)
    cards_at_open = len(tab.view.cards())
    driver = ScrollDriver(tab.view, ticks)
    late = driver.run()
    return {"open_s": open_s, "cards_at_open": cards_at_open, "lateness_ms": late,
            "cards_made": len(tab.view.cards()) - cards_at_open, "most_laid_out": driver.most_laid_out}

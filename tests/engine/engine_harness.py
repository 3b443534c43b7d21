"""Drive a real EngineLoop from a test: collect its events and wait on them."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from engine.loop import EngineLoop
from engine.protocol import Event, ModelLoaded, ModelLoadFailed, Token, TurnFinished, TurnStarted


class EngineHarness:
    def __init__(self, **loop_options: Any) -> None:
        """`loop_options`: EngineLoop's clock and loader (the model-free tests' fake clock and scripted models)."""
        self.events: list[tuple[float, Event]] = []
        self._condition = threading.Condition()
        self.loop = EngineLoop(self._collect, stats_interval_s=0.2, **loop_options)
        self.loop.start()

    def _collect(self, event: Event) -> None:
        with self._condition:
            self.events.append((time.perf_counter(), event))
            self._condition.notify_all()

    def wait_for(self, predicate: Callable[[Event], bool], timeout: float = 120.0, after: int = 0) -> Event:
        deadline = time.monotonic() + timeout
        with self._condition:
            while True:
                for _, event in self.events[after:]:
                    if predicate(event):
                        return event
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"timed out; last events: {[e for _, e in self.events[-5:]]}"
                self._condition.wait(remaining)

    def mark(self) -> int:
        with self._condition:
            return len(self.events)

    def wait_loaded(self, timeout: float = 120.0, after: int = 0) -> Event:
        return self.wait_for(lambda e: isinstance(e, (ModelLoaded, ModelLoadFailed)), timeout, after)

    def finished(self, chat_id: str, after: int = 0, timeout: float = 120.0) -> TurnFinished:
        event = self.wait_for(lambda e: isinstance(e, TurnFinished) and e.chat_id == chat_id, timeout, after)
        assert isinstance(event, TurnFinished)
        return event

    def started(self, chat_id: str, after: int = 0) -> TurnStarted:
        event = self.wait_for(lambda e: isinstance(e, TurnStarted) and e.chat_id == chat_id, 60, after)
        assert isinstance(event, TurnStarted)
        return event

    def tokens(self, chat_id: str, after: int = 0) -> list[tuple[float, str]]:
        with self._condition:
            return [(t, e.text) for t, e in self.events[after:] if isinstance(e, Token) and e.chat_id == chat_id]

    def close(self) -> None:
        self.loop.shutdown()
        assert not self.loop.running

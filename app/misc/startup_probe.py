"""`python -m app --startup-probe SECONDS`: the real app says when it became usable, then how busy it is idle.

One JSON line per moment, flushed as it happens, so whoever started the process can time each from
the process start (engine/bench/gui_startup.py does): `shown` once the window is on screen,
`usable` once the input of the current tab takes a typed key (it does while the model loads: a
message sent then is queued for it; `"typed": false` when it never did, e.g. no model could load),
`ready` once the tab's model is loaded (`"model": false` when it failed, or none came in time), then
`idle` with the CPU the whole process (GUI thread, engine thread, timers) used over SECONDS with the
window open and nothing streaming, as a percentage of one core. Then it quits.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

    from app.window.mainwindow import MainWindow

POLL_MS = 10
USABLE_TIMEOUT_S = 120.0
SETTLE_S = 1.0  # after the model answers: the load's own aftermath (warm-up threads) is not idle


def say(event: str, **figures: Any) -> None:
    print(json.dumps({"event": event, **figures}), flush=True)


class StartupProbe:
    """Watches the window from its first show to usable, then measures idle CPU and quits."""

    def __init__(self, window: MainWindow, app: QApplication, idle_s: float) -> None:
        from PySide6.QtCore import QTimer

        self.window, self.app, self.idle_s = window, app, idle_s
        self._failed = False
        self._typed = False
        self._deadline = time.monotonic() + USABLE_TIMEOUT_S
        self._poll = QTimer(interval=POLL_MS)
        self._poll.timeout.connect(self._on_poll)
        window.shown.connect(self._on_shown)
        window.bridge.model_load_failed.connect(self._on_model_failed)
        window.bridge.engine_failed.connect(self._on_model_failed)

    def _on_shown(self) -> None:
        say("shown")
        self._poll.start()

    def _on_model_failed(self, _message: str) -> None:
        self._failed = True

    def _on_poll(self) -> None:
        if not self._typed and self._takes_a_key():
            self._typed = True
            say("usable", typed=True)
        tab = self.window.current_tab()
        if tab is not None and tab.model_ready:
            self._ready(model=True)
        elif self._failed or time.monotonic() > self._deadline:
            self._ready(model=False)

    def _takes_a_key(self) -> bool:
        from PySide6.QtCore import QEvent, Qt
        from PySide6.QtGui import QKeyEvent

        tab = self.window.current_tab()
        if tab is None or not tab.input.isEnabled():
            return False
        before = tab.input.toPlainText()
        self.app.sendEvent(tab.input, QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_X, Qt.KeyboardModifier.NoModifier, "x"))
        taken = tab.input.toPlainText() == before + "x"
        tab.input.setPlainText(before)
        return taken

    def _ready(self, model: bool) -> None:
        from PySide6.QtCore import QTimer

        self._poll.stop()
        if not self._typed:
            say("usable", typed=False)
        say("ready", model=model)
        QTimer.singleShot(round(SETTLE_S * 1000), self._on_settled)

    def _on_settled(self) -> None:
        from PySide6.QtCore import QTimer

        started_cpu, started = time.process_time(), time.perf_counter()

        def report() -> None:
            cpu_s, wall_s = time.process_time() - started_cpu, time.perf_counter() - started
            say("idle", cpu_percent=round(100 * cpu_s / wall_s, 3), seconds=round(wall_s, 2))
            self.app.quit()

        QTimer.singleShot(round(self.idle_s * 1000), report)

"""The check on a thread of its own, reporting to the GUI through Qt signals.

`run_check` is plain Python; this starts it on a daemon thread named
hearth-quantcheck, passes Cancel in as an Event the check polls between
chunks and tokens, and saves the report on that thread when the check has
finished (so the GUI never waits on the disk). Signals emitted there are
queued to the GUI thread by Qt's automatic connection.
"""

from __future__ import annotations

import logging
import threading

from PySide6.QtCore import QObject, Signal

from app.quantcheck.saved import save
from engine.quantcheck.check import CheckSpec, run_check
from engine.quantcheck.errors import Cancelled, CheckError

log = logging.getLogger(__name__)


class CheckWorker(QObject):
    progressed = Signal(float, str)  # fraction 0..1, what it is doing
    check_finished = Signal(object)  # SavedCheck
    check_failed = Signal(str)  # for a person: which model or file, what to do
    check_cancelled = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self, spec: CheckSpec) -> None:
        if self.running:
            raise RuntimeError("a check is already running")
        self._cancel.clear()
        self._thread = threading.Thread(target=self._run, args=(spec,), name="hearth-quantcheck", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        self._cancel.set()

    def wait(self, timeout: float = 60.0) -> bool:
        """Join the thread (after cancel); True when it has ended."""
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def _run(self, spec: CheckSpec) -> None:
        try:
            report = run_check(spec, self.progressed.emit, self._cancel.is_set)
            saved = save(report)
        except Cancelled:
            self.check_cancelled.emit()
        except CheckError as error:
            self.check_failed.emit(str(error))
        except Exception as error:  # a bug must reach the dialog, not vanish with the thread
            log.exception("quantization check failed")
            self.check_failed.emit(f"The check stopped: {error}")
        else:
            self.check_finished.emit(saved)

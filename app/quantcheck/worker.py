"""The check on a thread of its own, reporting to the GUI through Qt signals.

`run_check` is plain Python; this starts it on a daemon thread named
hearth-quantcheck, passes Cancel in as an Event the check polls (between
answer tokens, and inside a text chunk's decode through llama.cpp's abort
callback), and saves the report on that thread when the check has finished
(so the GUI never waits on the disk). Signals emitted there are queued to the
GUI thread by Qt's automatic connection; if the dialog is gone, the check stops.
"""

from __future__ import annotations

import logging
import threading

from PySide6.QtCore import QObject, Signal

from app.misc.thread_relay import emit_from_thread
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
        signal: str  # the name of the signal that tells the dialog how it ended
        args: tuple[object, ...]
        try:
            report = run_check(spec, self._on_progress, self._cancel.is_set)
            signal, args = "check_finished", (save(report),)
        except Cancelled:
            signal, args = "check_cancelled", ()
        except CheckError as error:
            signal, args = "check_failed", (str(error),)
        except OSError as error:  # the reference's temporary file, or the saved result
            signal, args = "check_failed", (f"The check could not write its files: {error}.",)
        except Exception as error:  # a bug must reach the dialog, not vanish with the thread
            log.exception("quantization check failed")
            signal, args = "check_failed", (f"The check stopped: {error}",)
        emit_from_thread(self, signal, *args)  # not if the dialog went with its window meanwhile

    def _on_progress(self, fraction: float, message: str) -> None:
        if not emit_from_thread(self, "progressed", fraction, message):
            self._cancel.set()  # the dialog is gone: the check has nobody to report to, so it stops

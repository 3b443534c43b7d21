"""HistoryConnection: how a call from the GUI thread reaches the history thread and its answer comes back.

Separate from HistoryClient's typed methods because it changes for a different reason: the
thread, the worker (app/history/worker.py), the queue of requests in the order they were made,
the callbacks run on the GUI thread and how a failed write is reported (`error_occurred`, once
until a later call succeeds) are one mechanism, whatever calls there are. HistoryClient
(app/history/client.py) builds on it with one method per thing the window stores or reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from PySide6.QtCore import QCoreApplication, QObject, QThread, Signal, Slot

from app.history.store import HistoryStore
from app.history.worker import HistoryWorker, Request

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")
Failed = Callable[[str], None]
StoreMethod = Callable[Concatenate[HistoryStore, P], T]


class HistoryConnection(QObject):
    """The history thread and its worker; `_write` and `_read` queue one HistoryStore call each."""

    opened = Signal(object)  # StartupReport
    unavailable = Signal(str)  # the history could not be opened; nothing is saved
    error_occurred = Signal(str)  # a save failed; said once until something succeeds again

    _requested = Signal(object)  # a Request, to the worker, queued across threads

    def __init__(self, path: str | Path | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread = QThread()
        self._thread.setObjectName("hearth-history")
        self._worker = HistoryWorker(path)
        self._worker.moveToThread(self._thread)
        self._requested.connect(self._worker.run_request)
        self._worker.succeeded.connect(self._on_succeeded)
        self._worker.failed.connect(self._on_failed)
        self._callbacks: dict[int, tuple[Callable[[Any], None] | None, Failed | None]] = {}
        self._next_request = 0
        self._last_error = ""
        self._closed = False

    def start(self) -> None:
        self._thread.start()
        application = QCoreApplication.instance()
        if application is not None:  # a safety net: a running QThread must not outlive the app
            application.aboutToQuit.connect(self.close)
        self._queue("open", HistoryWorker.open, self.opened.emit, self.unavailable.emit)

    def close(self, timeout_ms: int = 10000) -> bool:
        """Close the database and join the thread; False if it hung."""
        if self._closed:
            return True
        self._queue("close", HistoryWorker.close)
        self._closed = True
        if not self._thread.isRunning():
            return True
        finished = self._thread.wait(timeout_ms)
        if not finished:
            log.warning("the history thread did not finish within %d ms", timeout_ms)
        return finished

    def _queue(self, name: str, run: Callable[[HistoryWorker], T],
               on_done: Callable[[T], None] | None = None, on_error: Failed | None = None) -> None:
        if self._closed:
            log.warning("history call %s after close was dropped", name)
            return
        self._next_request += 1
        self._callbacks[self._next_request] = (on_done, on_error)
        self._requested.emit(Request(self._next_request, name, run))

    def _write(self, method: StoreMethod[P, object], *args: P.args, **kwargs: P.kwargs) -> None:
        """A store call whose result nobody needs; a failure goes to `error_occurred`."""
        self._queue(method.__name__, lambda worker: method(worker.store, *args, **kwargs))

    def _read(self, on_done: Callable[[T], None], on_error: Failed | None,
              method: StoreMethod[P, T], *args: P.args, **kwargs: P.kwargs) -> None:
        self._queue(method.__name__, lambda worker: method(worker.store, *args, **kwargs), on_done, on_error)

    @Slot(int, object)
    def _on_succeeded(self, request_id: int, result: object) -> None:
        self._last_error = ""
        on_done, _ = self._callbacks.pop(request_id, (None, None))
        if on_done is not None:
            on_done(result)

    @Slot(int, str)
    def _on_failed(self, request_id: int, message: str) -> None:
        _, on_error = self._callbacks.pop(request_id, (None, None))
        if on_error is not None:
            on_error(message)
        elif message != self._last_error:
            self._last_error = message
            self.error_occurred.emit(message)

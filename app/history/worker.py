"""The history's own thread: HistoryWorker owns the HistoryStore and runs the client's requests in order.

The worker is a QObject moved to a QThread named "hearth-history"; it holds the
only sqlite connection. A Request carries a typed function of the worker (in
practice: one HistoryStore method with its arguments, see app/history/client.py),
so nothing is looked up by name. Results and failures go back as signals, queued
to the GUI thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app.history.records import ChatSnapshot, HistoryError
from app.history.store import HistoryStore
from app.misc.qt_compat import guard_emit_refcount_bug

log = logging.getLogger(__name__)
guard_emit_refcount_bug()  # the worker streams many emits too (see app/misc/qt_compat.py)


@dataclass(frozen=True)
class StartupReport:
    path: str
    recovered_from: str | None  # where a damaged database was moved, if it was
    interrupted_messages: int  # answers left streaming by a crash, now "interrupted"
    tabs: tuple[ChatSnapshot, ...]  # the open tabs, left to right
    current_tab: str | None


@dataclass(frozen=True)
class Request:
    """One job for the history thread; `name` is only for the log and the error text."""

    id: int
    name: str
    run: Callable[[HistoryWorker], object]


class HistoryWorker(QObject):
    """Runs requests on the history thread; never touched from the GUI thread after moveToThread."""

    succeeded = Signal(int, object)  # request id, result
    failed = Signal(int, str)  # request id, message for a person

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__()
        self._path = path
        self._store: HistoryStore | None = None
        self._open_failure = ""

    @Slot(object)
    def run_request(self, request: Request) -> None:
        try:
            result = request.run(self)
        except HistoryError as error:
            self.failed.emit(request.id, str(error))
        except Exception as error:  # a bug must not kill the thread that saves the chats
            log.exception("history request %s failed", request.name)
            self.failed.emit(request.id, f"The chat history failed unexpectedly ({request.name}: {error}).")
        else:
            self.succeeded.emit(request.id, result)

    @property
    def store(self) -> HistoryStore:
        if self._store is None:
            raise HistoryError(self._open_failure or "The chat history is not open.", "unavailable")
        return self._store

    def open(self) -> StartupReport:
        interrupted = 0
        if self._store is None:
            try:
                self._store = HistoryStore.open(self._path)
            except HistoryError as error:
                self._open_failure = str(error)
                raise
            # Only at the first open: later, "streaming" answers are this session's.
            interrupted = self._store.mark_interrupted_on_startup()
            self._store.purge_deleted()  # undo of a delete lasts until the next start
            self._store.drop_empty_closed_chats()
        store = self._store
        tabs = tuple(store.load_chat(chat.id) for chat in store.open_tabs())
        aside = str(store.recovered_from) if store.recovered_from else None
        return StartupReport(str(store.path), aside, interrupted, tabs, store.current_tab())

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        # Quit from inside: every request queued before "close" has already run.
        thread = QThread.currentThread()
        thread.quit()

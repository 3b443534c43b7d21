"""A worker thread's signal, emitted on the GUI thread only while the object it belongs to still exists.

A thread that emits a signal of a tab's or a dialog's object races that object's deletion: the tab
closes while the microphone probe, a transcription or a reading aloud is still running, and an emit
that starts a moment before the C++ object is freed touches freed memory and crashes the process
(catching RuntimeError covers only an object already known to be gone). Here the thread hands the
emit to one relay that lives as long as the application, and the relay, on the GUI thread where
objects are deleted, emits only if the object is still there: nothing can be freed between its
check and its emit.
"""

from __future__ import annotations

import threading

import shiboken6
from PySide6.QtCore import QCoreApplication, QObject, Qt, Signal, Slot

_lock = threading.Lock()
_relay: _Relay | None = None


class _Relay(QObject):
    posted = Signal(object, str, object)  # the signal's object, the signal's name, its arguments

    def __init__(self) -> None:
        super().__init__()
        self.posted.connect(self._emit, Qt.ConnectionType.QueuedConnection)

    @Slot(object, str, object)
    def _emit(self, owner: QObject, name: str, args: tuple[object, ...]) -> None:
        if shiboken6.isValid(owner):
            getattr(owner, name).emit(*args)


def _the_relay() -> _Relay:
    global _relay
    with _lock:
        if _relay is None:
            relay = _Relay()
            app = QCoreApplication.instance()
            if app is not None and relay.thread() is not app.thread():
                relay.moveToThread(app.thread())  # made on a worker: its queued emits run on the GUI thread
            _relay = relay
        return _relay


def emit_from_thread(owner: QObject, name: str, *args: object) -> bool:
    """Emit `owner`'s signal `name` with `args` on the GUI thread, unless `owner` is gone by then (the
    thread touches nothing of it but this check). False when it is gone already: the thread can stop."""
    if not shiboken6.isValid(owner):
        return False
    _the_relay().posted.emit(owner, name, args)
    return True

"""emit(): Signal.emit that survives PySide6 6.12.0's lost reference on Python < 3.12.

PySide6 6.12.0's SignalInstance.emit returns True without taking a reference
to it. On Python 3.12+ True is immortal and nothing happens; on 3.11 every emit
drops True's count by one and after a few hundred emits the interpreter aborts
("Fatal Python error: bool_dealloc"). We measure the drop once at import and,
only where it happens, give the reference back after each emit.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any

from PySide6.QtCore import QObject, Signal

_PROBES = 8


class _Probe(QObject):
    fired = Signal()


def _emit_drops_true() -> bool:
    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(_PROBES):
        probe.fired.emit()
    dropped = before - sys.getrefcount(True)
    for _ in range(max(dropped, 0)):  # undo what the probe itself cost
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(True))
    return dropped >= _PROBES


EMIT_DROPS_TRUE = _emit_drops_true()


def emit(signal: Any, *args: Any) -> None:
    """`signal.emit(*args)`, keeping True's reference count right."""
    signal.emit(*args)
    if EMIT_DROPS_TRUE:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(True))

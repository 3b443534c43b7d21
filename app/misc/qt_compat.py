"""A guard against PySide6 6.12.0's `SignalInstance.emit()` reference bug on Python 3.11.

That release returns `True` from every Python-side `emit()` without taking a
new reference, so each emit leaves `True` one reference short. On Python 3.12+
`True` is immortal and nothing happens; on 3.11 a few thousand streamed tokens
drive its count to zero and the interpreter aborts with "Fatal Python error:
bool_dealloc". When a probe shows the bug, we give `True` a reference count so
large that no session can use it up (what 3.12 does for every singleton).
"""

from __future__ import annotations

import ctypes
import sys

PROBE_EMITS = 8
_RESERVE = 1 << 40  # ~10^12 emits: years of streaming
_checked = False


def emit_loses_references() -> bool:
    """True when this PySide6 drops a reference to `True` on each emit."""
    from PySide6.QtCore import QObject, Signal

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(PROBE_EMITS):
        probe.ping.emit()
    return before - sys.getrefcount(True) >= PROBE_EMITS


def guard_emit_refcount_bug() -> bool:
    """Run once per process before streaming; returns whether the guard was needed."""
    global _checked
    if _checked or sys.version_info >= (3, 12) or sys.implementation.name != "cpython":
        return False
    _checked = True
    if not emit_loses_references():
        return False
    # ob_refcnt is the first field of every CPython object (Py_ssize_t, at id(obj)).
    ctypes.c_ssize_t.from_address(id(True)).value += _RESERVE
    return True

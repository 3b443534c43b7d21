"""The guard against PySide6 6.12.0's lost references to True: when it acts, what it writes, once per process.

The real count of True is checked in test_bridge.py on Python 3.11; here the decision is checked on
every Python, against stand-ins for the interpreter version, the probe and the memory write.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from app.misc import qt_compat


class Cell:
    """ctypes.c_ssize_t at an address: reads 0, records what is written."""

    writes: list[tuple[int, int]] = []

    def __init__(self, address: int) -> None:
        self.address = address

    @property
    def value(self) -> int:
        return 0

    @value.setter
    def value(self, new: int) -> None:
        Cell.writes.append((self.address, new))


@pytest.mark.parametrize(("version", "loses", "needed"), [
    ((3, 11, 7), True, True),  # the bug: True gets a reserve it cannot use up
    ((3, 11, 7), False, False),  # a sound PySide6: nothing written
    ((3, 12, 0), True, False),  # True is immortal: not even probed
])
def test_the_guard_acts_only_where_emits_lose_references(monkeypatch: pytest.MonkeyPatch, version: tuple[int, ...],
                                                         loses: bool, needed: bool) -> None:
    probes: list[bool] = []
    Cell.writes = []
    monkeypatch.setattr(qt_compat, "_checked", False)
    monkeypatch.setattr(qt_compat, "sys", SimpleNamespace(version_info=version, implementation=sys.implementation))
    monkeypatch.setattr(qt_compat, "ctypes", SimpleNamespace(c_ssize_t=SimpleNamespace(from_address=Cell)))
    monkeypatch.setattr(qt_compat, "emit_loses_references", lambda: probes.append(True) or loses)
    assert qt_compat.guard_emit_refcount_bug() is needed
    assert probes == ([True] if version < (3, 12) else [])
    assert Cell.writes == ([(id(True), qt_compat._RESERVE)] if needed else [])
    assert qt_compat.guard_emit_refcount_bug() is False and len(probes) <= 1  # once per process

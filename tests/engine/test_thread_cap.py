"""HEARTH_THREADS caps the threads of chat and voice models; what is not a whole number above 0 is ignored."""

from __future__ import annotations

import pytest

from engine.thread_cap import ENV, capped, thread_cap


def test_the_cap_lowers_a_count_and_never_raises_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "1")
    assert (thread_cap(), capped(2), capped(1)) == (1, 1, 1)
    monkeypatch.setenv(ENV, " 4 ")
    assert (thread_cap(), capped(2), capped(8)) == (4, 2, 4)
    for ignored in ("0", "-2", "two", "1.5", ""):
        monkeypatch.setenv(ENV, ignored)
        assert (thread_cap(), capped(2)) == (None, 2), ignored
    monkeypatch.delenv(ENV)
    assert (thread_cap(), capped(3)) == (None, 3)

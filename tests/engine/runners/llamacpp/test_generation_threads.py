"""Threads for steps that generate: every core only while other processes leave the CPUs idle."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Callable

from engine.runners.llamacpp.params import IDLE_BELOW, SAMPLE_SECONDS, GenerationThreads, OtherLoad


def test_generation_takes_every_core_only_while_others_leave_them_idle() -> None:
    load = [0.0]
    threads = GenerationThreads(1, 2, others=lambda: load[0])
    assert threads.pick() == 2
    load[0] = IDLE_BELOW + 0.1
    assert threads.pick() == 1
    load[0] = IDLE_BELOW - 0.1
    assert threads.pick() == 2
    # where generation already has every core (SMT leaves one logical CPU spare), there is no choice
    assert GenerationThreads(8, 8, others=lambda: 3.0).pick() == 8


def _reading_after(load: OtherLoad, busy: Callable[[], None]) -> float:
    load()  # starts a new interval
    busy()
    return load()


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_other_load_counts_other_processes_and_not_this_one() -> None:
    load = OtherLoad()
    assert load() == float("inf")  # nothing measured yet: assumed busy
    time.sleep(SAMPLE_SECONDS)
    seconds = SAMPLE_SECONDS + 0.3
    own = _reading_after(load, lambda: _spin(seconds))  # this process's own threads are the engine's
    child = subprocess.Popen([sys.executable, "-c", f"import time\nend = time.monotonic() + {seconds + 0.5}\n"
                              "while time.monotonic() < end: pass"])
    try:
        time.sleep(0.2)  # the interpreter starting
        other = _reading_after(load, lambda: time.sleep(seconds))
    finally:
        child.wait()
    # a process spinning on one CPU reads as nearly one CPU, this process's own spinning as nothing
    # (other work on the machine adds to both readings alike)
    assert other - own > 0.5, (own, other)
    assert own < float("inf") and other < float("inf")

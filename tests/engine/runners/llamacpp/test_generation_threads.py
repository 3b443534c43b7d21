"""Threads for steps that generate: every core only while other processes leave the CPUs idle.

OtherLoad is read against a machine the test sets (psutil's counters and the clock): CPU shares
measured after sleeps on a shared 2-core machine say more about its neighbours than about the code.
"""

from __future__ import annotations

from types import SimpleNamespace

import psutil
import pytest

from engine.runners.llamacpp import params
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


class Machine:
    """The CPU seconds psutil reports (the whole machine's by kind, this process's own) and the clock."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.system = {"user": 50.0, "nice": 0.0, "system": 20.0, "idle": 900.0, "iowait": 3.0, "irq": 0.0,
                       "softirq": 0.0, "steal": 0.0, "guest": 0.0, "guest_nice": 0.0}
        self.own = SimpleNamespace(user=5.0, system=1.0)

    def cpu_times(self) -> SimpleNamespace:
        return SimpleNamespace(_asdict=lambda: dict(self.system))

    def process(self) -> SimpleNamespace:
        return SimpleNamespace(cpu_times=lambda: SimpleNamespace(user=self.own.user, system=self.own.system))


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> Machine:
    fake = Machine()
    monkeypatch.setattr(psutil, "cpu_times", fake.cpu_times)
    monkeypatch.setattr(psutil, "Process", fake.process)
    monkeypatch.setattr(params, "time", SimpleNamespace(monotonic=lambda: fake.now))
    return fake


def test_other_load_counts_other_processes_and_not_this_one(machine: Machine) -> None:
    load = OtherLoad()
    assert load() == float("inf")  # nothing measured yet: assumed busy
    machine.now += SAMPLE_SECONDS / 2
    machine.system["user"] += 5.0
    assert load() == float("inf"), "no new reading before SAMPLE_SECONDS have passed"

    machine.now += SAMPLE_SECONDS / 2  # one interval: this process spun one CPU, nobody else did
    machine.system["user"] += SAMPLE_SECONDS - 5.0
    machine.own.user += SAMPLE_SECONDS
    assert load() == pytest.approx(0.0)  # the engine's own threads are not "others"

    machine.now += SAMPLE_SECONDS  # another process spun one CPU (user and system time alike)
    machine.system["user"] += 0.6 * SAMPLE_SECONDS
    machine.system["system"] += 0.4 * SAMPLE_SECONDS
    assert load() == pytest.approx(1.0)

    machine.now += 2 * SAMPLE_SECONDS  # idle, iowait and guest time are not busy; steal (another guest) is
    for kind in ("idle", "iowait", "guest", "guest_nice"):
        machine.system[kind] += 10.0
    machine.system["steal"] += 0.5 * SAMPLE_SECONDS
    assert load() == pytest.approx(0.25)

    machine.now += SAMPLE_SECONDS  # this process's counter ahead of the machine's (their rounding): never negative
    machine.own.system += 0.1
    assert load() == 0.0


def test_other_load_reads_this_machines_counters(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real psutil's fields: one reading, finite and never negative (its value is the neighbours')."""
    clock = [1000.0]
    monkeypatch.setattr(params, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    load = OtherLoad()
    clock[0] += SAMPLE_SECONDS
    assert 0.0 <= load() < float("inf")

"""A scripted stand-in for pynvml, for the probes' unit tests only (no GPU on most test machines)."""

from __future__ import annotations

import os
import sys
import types
from dataclasses import dataclass, field

import pytest

from engine.catalog import devices

GiB = 1 << 30


@dataclass
class FakeGpu:
    name: str
    total_bytes: int
    used_bytes: int
    processes: dict[int, int] = field(default_factory=dict)  # pid -> bytes


class FakeNvml(types.ModuleType):
    """The calls the probes make, answered from a list of GPUs; counts nvmlInit."""

    def __init__(self, gpus: list[FakeGpu], init_fails: bool = False) -> None:
        super().__init__("pynvml")
        self.gpus, self.init_fails, self.inits, self.calls = gpus, init_fails, 0, 0

    def nvmlInit(self) -> None:
        self.inits += 1
        if self.init_fails:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlDeviceGetCount(self) -> int:
        self.calls += 1
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        self.calls += 1
        if not 0 <= index < len(self.gpus):
            raise RuntimeError("Invalid Argument")
        return self.gpus[index]

    def nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu) -> types.SimpleNamespace:
        return types.SimpleNamespace(total=gpu.total_bytes, used=gpu.used_bytes, free=gpu.total_bytes - gpu.used_bytes)

    def nvmlDeviceGetName(self, gpu: FakeGpu) -> bytes:
        return gpu.name.encode()  # older nvidia-ml-py returns bytes, newer str: both are handled

    def nvmlDeviceGetComputeRunningProcesses(self, gpu: FakeGpu) -> list[types.SimpleNamespace]:
        return [types.SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in gpu.processes.items()]


def install_nvml(monkeypatch: pytest.MonkeyPatch, nvml: FakeNvml | None) -> None:
    """Make `nvml` the pynvml the probes import (None: not installed), and hide torch from them."""
    monkeypatch.setitem(sys.modules, "pynvml", nvml)  # None in sys.modules makes the import fail
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(devices, "_nvml", devices._Nvml())  # started afresh, as in a new process


def h200(used_by_us: int = 30 * GiB, used_by_others: int = 10 * GiB) -> FakeGpu:
    return FakeGpu("NVIDIA H200", 140 * GiB, used_by_us + used_by_others,
                   {os.getpid(): used_by_us, os.getpid() + 1: used_by_others})

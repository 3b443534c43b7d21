"""The machine's memory: RAM from psutil, GPUs from NVML (scripted here), never an exception."""

from __future__ import annotations

import sys
import types

import psutil
import pytest

from engine.catalog.devices import DeviceMemory, cuda_device, cuda_devices, process_rss, system_memory
from engine.units import format_bytes
from tests.engine.catalog.fake_nvml import GiB, FakeGpu, FakeNvml, h200, install_nvml

MiB = 1 << 20


def test_ram_is_this_machines_with_this_process_share() -> None:
    ram = system_memory()
    assert (ram.device, ram.name, ram.total_bytes) == ("cpu", "RAM", psutil.virtual_memory().total)
    assert 0 < ram.free_bytes <= ram.total_bytes and ram.used_bytes == ram.total_bytes - ram.free_bytes
    assert 10 * MiB < ram.process_bytes < ram.total_bytes
    assert abs(process_rss() - ram.process_bytes) < 50 * MiB
    assert ram.label() == f"CPU ({format_bytes(ram.total_bytes)} RAM)"


def test_every_gpu_nvml_sees_with_free_total_and_this_process_share(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = FakeNvml([h200(), FakeGpu("NVIDIA L4", 24 * GiB, 1 * GiB)])
    install_nvml(monkeypatch, nvml)
    assert cuda_devices() == [
        DeviceMemory("cuda:0", "NVIDIA H200", 100 * GiB, 140 * GiB, 30 * GiB),
        DeviceMemory("cuda:1", "NVIDIA L4", 23 * GiB, 24 * GiB, 0),
    ]
    assert cuda_device(1) == DeviceMemory("cuda:1", "NVIDIA L4", 23 * GiB, 24 * GiB, 0)
    assert cuda_device(2) is None  # no such index, and no torch to ask
    assert cuda_devices()[0].label() == "cuda:0: NVIDIA H200 (140.0 GiB)"
    assert nvml.inits == 1, "NVML is started once, not on every reading"


@pytest.mark.parametrize("nvml", [None, FakeNvml([h200()], init_fails=True)], ids=["no nvidia-ml-py", "no driver"])
def test_without_nvml_there_are_no_gpus_and_no_error(monkeypatch: pytest.MonkeyPatch, nvml: FakeNvml | None) -> None:
    install_nvml(monkeypatch, nvml)
    assert cuda_devices() == [] and cuda_device(0) is None
    assert cuda_devices() == []
    assert nvml is None or nvml.inits == 1, "a failed start is not retried on every reading"


def test_torch_answers_for_a_gpu_when_it_is_already_imported_and_nvml_is_missing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    install_nvml(monkeypatch, None)
    cuda = types.SimpleNamespace(
        is_available=lambda: True, mem_get_info=lambda index: (6 * GiB, 16 * GiB),
        get_device_name=lambda index: f"NVIDIA T4 #{index}", memory_reserved=lambda index: 2 * GiB,
    )
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    assert cuda_device(0) == DeviceMemory("cuda:0", "NVIDIA T4 #0", 6 * GiB, 16 * GiB, 2 * GiB)
    assert cuda_devices() == []  # the list is NVML's: torch is only asked about the device in use


def test_the_real_nvml_agrees_or_there_is_none() -> None:
    try:
        import pynvml

        pynvml.nvmlInit()
        expected = pynvml.nvmlDeviceGetCount()
    except Exception:  # no driver on this machine: the probe must say "no GPU", not fail
        expected = 0
    found = cuda_devices()
    assert len(found) == expected
    assert all(d.total_bytes >= d.free_bytes > 0 and d.device.startswith("cuda:") for d in found)

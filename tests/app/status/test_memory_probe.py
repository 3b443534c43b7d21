"""The gauge's memory reading: VRAM from NVML when the model is on a GPU, else this process's RAM.

NVML is scripted (tests/engine/catalog/fake_nvml.py) so that each case has one exact answer,
whether or not the machine running the tests has a GPU.
"""

from __future__ import annotations

import psutil
import pytest

from app.status.memory_probe import MemorySnapshot, gpu_index_of, snapshot
from tests.engine.catalog.fake_nvml import GiB, FakeNvml, h200, install_nvml


def assert_ram(reading: MemorySnapshot) -> None:
    assert (reading.kind, reading.device, reading.total_bytes) == ("RAM", "CPU", psutil.virtual_memory().total)
    assert 10_000_000 < reading.process_bytes < reading.total_bytes
    assert 0 < reading.used_bytes <= reading.total_bytes


def test_a_model_on_the_gpu_reads_that_gpus_vram_and_this_process_share(monkeypatch: pytest.MonkeyPatch) -> None:
    install_nvml(monkeypatch, FakeNvml([h200(), h200(used_by_us=0)]))
    assert snapshot(on_gpu=True, gpu_index=0) == MemorySnapshot("VRAM", "NVIDIA H200", 40 * GiB, 140 * GiB, 30 * GiB)
    assert snapshot(on_gpu=True, gpu_index=1) == MemorySnapshot("VRAM", "NVIDIA H200", 10 * GiB, 140 * GiB, 0)


def test_a_model_on_the_cpu_reads_ram_without_asking_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = FakeNvml([h200()])
    install_nvml(monkeypatch, nvml)
    assert_ram(snapshot(on_gpu=False))
    assert nvml.calls == 0


@pytest.mark.parametrize(
    ("nvml", "index"),
    [(None, 0), (FakeNvml([h200()], init_fails=True), 0), (FakeNvml([h200()]), 3)],
    ids=["no nvidia-ml-py", "no driver", "no such gpu"],
)
def test_without_a_gpu_reading_the_gauge_falls_back_to_ram(
    monkeypatch: pytest.MonkeyPatch, nvml: FakeNvml | None, index: int
) -> None:
    install_nvml(monkeypatch, nvml)
    assert_ram(snapshot(on_gpu=True, gpu_index=index))


def test_device_strings_name_the_gpu_index() -> None:
    assert gpu_index_of("cuda:1 (NVIDIA H200)") == 1
    assert gpu_index_of("cuda:0") == 0 and gpu_index_of("cpu") == 0 and gpu_index_of("") == 0
    assert gpu_index_of("cuda:x") == 0

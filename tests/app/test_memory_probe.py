"""The gauge's memory probes: process RAM everywhere, and a clean fallback where there is no GPU."""

from __future__ import annotations

import psutil

from app.status.memory_probe import format_bytes, gpu_index_of, process_rss_bytes, snapshot


def test_ram_snapshot_reports_this_process_against_the_machine() -> None:
    reading = snapshot(on_gpu=False)
    assert reading.kind == "RAM" and reading.device == "CPU"
    assert reading.total_bytes == psutil.virtual_memory().total
    assert 10_000_000 < reading.process_bytes < reading.total_bytes
    assert 0 < reading.used_bytes <= reading.total_bytes
    assert abs(process_rss_bytes() - reading.process_bytes) < 50_000_000


def test_asking_for_a_gpu_without_one_falls_back_to_ram_or_reports_vram() -> None:
    reading = snapshot(on_gpu=True)  # NVML answers on a CUDA machine; here there is none
    if reading.kind == "VRAM":
        assert reading.total_bytes > 1_000_000_000 and reading.device
    else:
        assert reading.device == "CPU"


def test_device_strings_and_sizes_read_as_a_person_expects() -> None:
    assert gpu_index_of("cuda:1 (NVIDIA H200)") == 1
    assert gpu_index_of("cuda:0") == 0 and gpu_index_of("cpu") == 0 and gpu_index_of("") == 0
    assert [format_bytes(n) for n in (512, 2048, 98 * 1024**2, 3 * 1024**3 // 2)] == [
        "512 B", "2 KiB", "98 MiB", "1.5 GiB"
    ]  # fmt: skip

"""The gauge's memory reading: the device the model's weights live in, VRAM or RAM.

No Qt here: plain functions a timer can call. The probing itself is the engine's
(engine/catalog/devices.py, NVML for GPUs); this picks the device and shapes the
reading for the gauge. Never raises: without a GPU reading it falls back to RAM.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.catalog.devices import DeviceMemory, cuda_device, system_memory


@dataclass(frozen=True)
class MemorySnapshot:
    """One reading of the memory the model lives in."""

    kind: str  # "VRAM" or "RAM"
    device: str  # "CPU", "NVIDIA H200" ...
    used_bytes: int  # the whole device: all processes
    total_bytes: int
    process_bytes: int  # this process's share


def snapshot(on_gpu: bool, gpu_index: int = 0) -> MemorySnapshot:
    """The memory the model's weights live in; RAM when there is no GPU reading."""
    found = cuda_device(gpu_index) if on_gpu else None
    if found is not None:
        return _reading("VRAM", found.name, found)
    return _reading("RAM", "CPU", system_memory())


def _reading(kind: str, name: str, memory: DeviceMemory) -> MemorySnapshot:
    return MemorySnapshot(kind, name, memory.used_bytes, memory.total_bytes, memory.process_bytes)


def gpu_index_of(device: str) -> int:
    """The CUDA index in an engine device string such as "cuda:1 (NVIDIA H200)"."""
    head = device.split()[0] if device else ""
    if head.startswith("cuda:"):
        try:
            return int(head[5:])
        except ValueError:
            return 0
    return 0

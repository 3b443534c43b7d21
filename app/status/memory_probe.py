"""Memory probes for the gauge: GPU memory through NVML (or torch), process RAM through psutil.

No Qt and no engine here: plain functions a timer can call. Every probe is cheap
(a few microseconds to a millisecond) and never raises: a probe that cannot
answer returns None, and the gauge shows what it has.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MemorySnapshot:
    """One reading of the memory the model lives in."""

    kind: str  # "VRAM" or "RAM"
    device: str  # "CPU", "NVIDIA H200" ...
    used_bytes: int  # the whole device: all processes
    total_bytes: int
    process_bytes: int  # this process's share


def process_rss_bytes() -> int:
    """Resident memory of this process (0 if psutil cannot tell)."""
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # psutil can be denied access on locked-down systems
        return 0


def ram_snapshot() -> MemorySnapshot:
    """The process's RAM against the machine's total."""
    import psutil

    virtual = psutil.virtual_memory()
    return MemorySnapshot(
        kind="RAM",
        device="CPU",
        used_bytes=int(virtual.total - virtual.available),
        total_bytes=int(virtual.total),
        process_bytes=process_rss_bytes(),
    )


def gpu_snapshot(index: int = 0) -> MemorySnapshot | None:
    """VRAM of one CUDA device: NVML first, torch only if torch is already imported."""
    return _nvml_snapshot(index) or _torch_snapshot(index)


def snapshot(on_gpu: bool, gpu_index: int = 0) -> MemorySnapshot:
    """The memory the model's weights live in; falls back to RAM."""
    if on_gpu:
        found = gpu_snapshot(gpu_index)
        if found is not None:
            return found
    return ram_snapshot()


def gpu_index_of(device: str) -> int:
    """The CUDA index in an engine device string such as "cuda:1 (NVIDIA H200)"."""
    head = device.split()[0] if device else ""
    if head.startswith("cuda:"):
        try:
            return int(head[5:])
        except ValueError:
            return 0
    return 0


# ------------------------------------------------------------------ NVML

_nvml: Any = None
_nvml_failed = False


def _nvml_module() -> Any:
    """pynvml, initialised once; None when there is no driver or no package."""
    global _nvml, _nvml_failed
    if _nvml is None and not _nvml_failed:
        try:
            import pynvml

            pynvml.nvmlInit()
            _nvml = pynvml
        except Exception:  # no NVIDIA driver, or nvidia-ml-py missing: not an error
            _nvml_failed = True
    return _nvml


def _nvml_snapshot(index: int) -> MemorySnapshot | None:
    nvml = _nvml_module()
    if nvml is None:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        info = nvml.nvmlDeviceGetMemoryInfo(handle)
        name = nvml.nvmlDeviceGetName(handle)
        name = name.decode() if isinstance(name, bytes) else str(name)
        return MemorySnapshot("VRAM", name, int(info.used), int(info.total), _nvml_process_bytes(nvml, handle))
    except Exception:
        return None


def _nvml_process_bytes(nvml: Any, handle: Any) -> int:
    pid = os.getpid()
    try:
        processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:
        return 0
    for process in processes:
        if process.pid == pid and process.usedGpuMemory is not None:
            return int(process.usedGpuMemory)
    return 0


def _torch_snapshot(index: int) -> MemorySnapshot | None:
    # Importing torch costs seconds; only ask it when the HF backend already did.
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        free, total = torch.cuda.mem_get_info(index)
        name = torch.cuda.get_device_name(index)
        return MemorySnapshot("VRAM", name, int(total - free), int(total), int(torch.cuda.memory_reserved(index)))
    except Exception:
        return None


def format_bytes(count: int) -> str:
    """Human sizes in binary units: 512 B, 98 MiB, 1.4 GiB."""
    if count < 1024:
        return f"{count} B"
    if count < 1024**2:
        return f"{count / 1024:.0f} KiB"
    if count < 1024**3:
        return f"{count / 1024**2:.0f} MiB"
    return f"{count / 1024**3:.1f} GiB"

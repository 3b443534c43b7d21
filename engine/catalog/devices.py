"""How much memory this machine's devices have: RAM through psutil, NVIDIA GPUs through NVML.

The one place that asks NVML: the settings' memory estimate and the gauge's live
reading both come here. Every probe is cheap (microseconds to a millisecond,
after NVML's one-time start) and never raises: what cannot be read is absent.
torch is never imported here; its CUDA view is asked only when the transformers
backend already imported it and NVML is missing.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any

from engine.units import format_bytes


@dataclass(frozen=True)
class DeviceMemory:
    device: str  # "cpu", "cuda:0"
    name: str  # "RAM", "NVIDIA H200"
    free_bytes: int
    total_bytes: int
    process_bytes: int = 0  # this process's share; 0 where the driver does not say

    @property
    def used_bytes(self) -> int:
        """By every process on the device."""
        return self.total_bytes - self.free_bytes

    def label(self) -> str:
        if self.device == "cpu":
            return f"CPU ({format_bytes(self.total_bytes)} RAM)"
        return f"{self.device}: {self.name} ({format_bytes(self.total_bytes)})"


def system_memory() -> DeviceMemory:
    import psutil

    memory = psutil.virtual_memory()
    return DeviceMemory("cpu", "RAM", int(memory.available), int(memory.total), process_rss())


def process_rss() -> int:
    """Resident memory of this process; 0 where psutil is denied it (locked-down systems)."""
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except Exception:  # noqa: BLE001 - a probe never raises
        return 0


# ---------------------------------------------------------------- NVIDIA GPUs


class _Nvml:
    """pynvml, started on first use and kept; absent for good once it failed (no driver, no package)."""

    def __init__(self) -> None:
        self._module: Any = None
        self._failed = False

    def module(self) -> Any:
        if self._module is None and not self._failed:
            try:
                module = importlib.import_module("pynvml")
                module.nvmlInit()
                self._module = module
            except Exception:  # noqa: BLE001 - ImportError, or NVMLError without a driver or GPU
                self._failed = True
        return self._module


_nvml = _Nvml()


def cuda_devices() -> list[DeviceMemory]:
    """Every NVIDIA GPU NVML sees; [] without a driver or nvidia-ml-py."""
    nvml = _nvml.module()
    if nvml is None:
        return []
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except Exception:  # noqa: BLE001
        return []
    return [device for device in (_nvml_device(nvml, index) for index in range(count)) if device is not None]


def cuda_device(index: int) -> DeviceMemory | None:
    """One CUDA device: NVML first, torch's view if torch is already imported; None if neither can tell."""
    nvml = _nvml.module()
    found = _nvml_device(nvml, index) if nvml is not None else None
    return found or _torch_device(index)


def _nvml_device(nvml: Any, index: int) -> DeviceMemory | None:
    # NVML numbers devices by PCI bus; CUDA does too when CUDA_DEVICE_ORDER=PCI_BUS_ID,
    # which is the usual set-up on single-GPU and homogeneous machines
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        info = nvml.nvmlDeviceGetMemoryInfo(handle)
        name = nvml.nvmlDeviceGetName(handle)
    except Exception:  # noqa: BLE001 - an index NVML does not have, a lost driver
        return None
    name = name.decode() if isinstance(name, bytes) else str(name)
    return DeviceMemory(f"cuda:{index}", name, int(info.free), int(info.total), _nvml_process_bytes(nvml, handle))


def _nvml_process_bytes(nvml: Any, handle: Any) -> int:
    try:
        processes = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:  # noqa: BLE001 - not supported on some GPUs and in some containers
        return 0
    pid = os.getpid()
    return sum(int(p.usedGpuMemory) for p in processes if p.pid == pid and p.usedGpuMemory is not None)


def _torch_device(index: int) -> DeviceMemory | None:
    # Importing torch costs seconds; only ask it when the HF backend already did.
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        free, total = torch.cuda.mem_get_info(index)
        name = str(torch.cuda.get_device_name(index))
        return DeviceMemory(f"cuda:{index}", name, int(free), int(total), int(torch.cuda.memory_reserved(index)))
    except Exception:  # noqa: BLE001
        return None

"""The memory estimate for this machine: its RAM and whether it has a GPU, read once per call.

The settings dialog, Get models, the bench and the GPU check all size a model with
`estimate`; those that have not read the machine's memory themselves come here, so
that every one of them decides "auto" (device, prompt copy) as the runner will.
"""

from __future__ import annotations

import os

from engine.catalog.description import ModelDescription
from engine.catalog.devices import cuda_devices, system_memory
from engine.catalog.memory import Estimate, estimate
from engine.protocol import ModelConfig


def estimate_here(model: ModelDescription, config: ModelConfig, has_gpu: bool | None = None) -> Estimate:
    """`estimate` with this machine's RAM; `has_gpu` read from the machine unless the caller knows it."""
    if has_gpu is None:
        has_gpu = config.device != "cpu" and bool(cuda_devices())
    return estimate(model, config, has_gpu=has_gpu, total_memory=total_ram())


def total_ram() -> int:
    """The machine's RAM; from the system's page count where psutil is not installed (the GPU check)."""
    try:
        return system_memory().total_bytes
    except ImportError:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))

"""The gauge's memory figures against torch's and the estimate's, for one load.

The gauge reads NVML through engine/catalog/devices.py (the whole card, and
this process's share where the driver says); torch.cuda.mem_get_info reads the
same card through the CUDA runtime; the settings' estimate
(engine/catalog/memory.py) is what the dialog promised before loading. All
three are taken as differences from just before the load, after the CUDA
context exists. On the CPU the gauge shows this process's RSS instead.
"""

from __future__ import annotations

from typing import Any

from engine.catalog.devices import cuda_device, process_rss
from engine.protocol import ModelConfig


class MemoryCheck:
    def __init__(self, on_gpu: bool) -> None:
        self.on_gpu = on_gpu
        self.torch: Any = None
        self.before_free = 0
        if on_gpu:
            import torch

            torch.cuda.init()
            torch.zeros(1, device="cuda")  # the CUDA context, before the baseline
            self.torch = torch
            self.before_free = int(torch.cuda.mem_get_info(0)[0])
            torch.cuda.reset_peak_memory_stats(0)
        self.before_gauge = cuda_device(0) if on_gpu else None
        self.before_rss = process_rss()

    def after_load(self, config: ModelConfig) -> dict[str, Any]:
        figures = self._estimate(config, self.on_gpu)
        if not self.on_gpu:
            grown = process_rss() - self.before_rss
            figures.update(gauge="RAM (process RSS)", rss_growth_bytes=grown,
                           estimate_over_measured=_ratio(figures.get("estimate_device_bytes"), grown))
            return figures
        torch, gauge = self.torch, cuda_device(0)
        torch_used = self.before_free - int(torch.cuda.mem_get_info(0)[0])
        figures.update(torch_used_bytes=torch_used, torch_max_allocated_bytes=int(torch.cuda.max_memory_allocated(0)),
                       torch_max_reserved_bytes=int(torch.cuda.max_memory_reserved(0)))
        if gauge is None or self.before_gauge is None:
            figures["gauge"] = "no NVML reading (nvidia-ml-py missing, or no driver answer)"
            return figures
        gauge_used = gauge.used_bytes - self.before_gauge.used_bytes
        figures.update(gauge=f"NVML: {gauge.name}", gauge_used_bytes=gauge_used,
                       gauge_process_bytes=gauge.process_bytes, gauge_total_bytes=gauge.total_bytes,
                       gauge_over_torch=_ratio(gauge_used, torch_used),
                       estimate_over_gauge=_ratio(figures.get("estimate_device_bytes"), gauge_used))
        return figures

    @staticmethod
    def _estimate(config: ModelConfig, on_gpu: bool) -> dict[str, Any]:
        from engine.catalog import models
        from engine.catalog.here import estimate_here

        try:
            found = estimate_here(models.describe(config.path), config, has_gpu=on_gpu)
        except Exception as error:  # noqa: BLE001 - a figure that could not be made is reported as such
            return {"estimate_error": str(error)}
        return {"estimate_device_bytes": found.device_bytes, "estimate_total_bytes": found.total_bytes,
                "estimate_on_gpu": found.on_gpu}


def _ratio(numerator: Any, denominator: Any) -> float | None:
    if not isinstance(numerator, int) or not isinstance(denominator, int) or denominator <= 0:
        return None
    return round(numerator / denominator, 3)

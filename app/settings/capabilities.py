"""What this machine and environment can run, for the settings dialog's choices; no Qt, no torch import.

`probe_capabilities(deep=False)` only asks whether the libraries are installed
(a path lookup each). The deep probe also loads llama.cpp to ask its build about
GPU offload and asks NVML for the GPUs: about a second or more on a busy machine,
so the dialog runs it off the GUI thread (app/settings/model_scan.py).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field

from engine.catalog.devices import DeviceMemory, cuda_devices


@dataclass(frozen=True)
class Capabilities:
    llama_cpp: bool = True
    llama_cpp_gpu: bool = False
    transformers: bool = False
    bitsandbytes: bool = False
    flash_attn: bool = False
    gpus: tuple[DeviceMemory, ...] = field(default_factory=tuple)
    gpus_known: bool = True  # False until the deep probe has looked for GPUs


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def probe_capabilities(deep: bool = True) -> Capabilities:
    llama_cpp = _installed("llama_cpp")
    installed = Capabilities(llama_cpp=llama_cpp, transformers=_installed("transformers") and _installed("torch"),
                             bitsandbytes=_installed("bitsandbytes"), flash_attn=_installed("flash_attn"),
                             gpus_known=False)
    if not deep:
        return installed
    return Capabilities(llama_cpp, llama_cpp and _llama_cpp_offloads(), installed.transformers,
                        installed.bitsandbytes, installed.flash_attn, tuple(cuda_devices()), gpus_known=True)


def _llama_cpp_offloads() -> bool:
    try:
        import llama_cpp  # the engine loads it anyway; its build knows whether it can offload

        return bool(llama_cpp.llama_supports_gpu_offload())
    except Exception:  # a broken build: the engine will report it when loading
        return False

"""The memory estimate for what the settings dialog shows: the chosen model, its config, what loads beside it.

Separate from the dialog because it changes whenever something new takes memory next to the
chat model (the documents' GGUF embedding model, ...) or the estimate's inputs change, while
the dialog changes with its pages and with how settings are loaded, checked and applied.
MemorySection (memory_section.py) draws the result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from engine.catalog.description import ModelDescription
from engine.catalog.devices import DeviceMemory
from engine.catalog.memory import Estimate, estimate
from engine.documents.embedder import embedder_bytes
from engine.protocol import ModelConfig


def dialog_estimate(description: ModelDescription, config: ModelConfig, on_gpu: bool, total_memory: int,
                    embedding_mode: object, embedding_model: str) -> Estimate | None:
    """The estimate for `description` loaded with `config`, counting the documents' embedding model;
    None where nothing is loaded on this computer by it (a remote server, a folder for llama.cpp)."""
    if config.backend == "remote" or config.backend == "llamacpp" and description.kind != "gguf":
        return None  # a remote server's memory is its own
    result = estimate(description, config, has_gpu=on_gpu, total_memory=total_memory)
    return dataclasses.replace(result, embedding_bytes=embedding_model_bytes(embedding_mode, embedding_model))


def embedding_model_bytes(mode: object, path: str) -> int:
    """Settings > Documents' GGUF embedding model, which the document worker loads beside the chat model."""
    path = path.strip()
    if mode != "gguf" or not path or not Path(path).is_file():
        return 0
    return embedder_bytes(path)


def device_memory(result: Estimate, gpus: Sequence[DeviceMemory], ram: DeviceMemory) -> DeviceMemory:
    """The memory the estimate is measured against: the GPU the model goes on (its device, else the first), or RAM."""
    if result.on_gpu and gpus:
        wanted = result.config.device if result.config.device.startswith("cuda:") else "cuda:0"
        return next((gpu for gpu in gpus if gpu.device == wanted), gpus[0])
    return ram

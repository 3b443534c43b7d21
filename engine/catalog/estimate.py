"""The memory estimate's result: bytes a model needs and where they go, right after load and with every chat full.

engine/catalog/memory.py (llama.cpp) and engine/catalog/memory_hf.py (transformers) fill it in.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.catalog.description import ModelDescription
from engine.protocol import ModelConfig

KV_BYTES_PER_ELEMENT = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}  # ggml block sizes


@dataclass(frozen=True)
class Estimate:
    """Bytes a model needs with a given configuration, and where they go.

    The sums are for every chat full: each chat's cache at its context, and the buffers a long prompt's
    micro-batch uses. `growth_bytes` is the part of the device's share that is not resident right after
    load: llama.cpp allocates its compute buffer at load but touches its pages only when steps run (on
    the CPU); transformers grows a CPU cache with the chats and allocates a step's activations when it
    runs. llama.cpp's KV cache is cleared at load, so it is resident from the start; on a GPU the
    buffers are whole at load (VRAM is not paged in as it is touched).
    """

    weights_bytes: int
    kv_cache_bytes: int
    overhead_bytes: int  # everything else, transient_bytes included
    gpu_bytes: int  # the part that lives on the GPU
    kv_cells: int  # positions the KV cache holds in all
    on_gpu: bool
    gpu_layers: int  # repeating layers on the GPU
    model: ModelDescription
    config: ModelConfig
    transient_bytes: int = 0  # the part of the overhead a step allocates and frees again (transformers)
    repacked_bytes: int = 0  # the part of the weights that is llama.cpp's repacked copy on the CPU
    prompt_copy_bytes: int = 0  # llama.cpp's F32 copy for reading prompts: its weights and one chat's cache
    total_memory: int = 0  # the machine's RAM the estimate was made for
    growth_bytes: int = 0  # of device_bytes: what becomes resident only as chats fill and prompts are read
    embedding_bytes: int = 0  # the documents' GGUF embedding model beside it, in RAM (embedding_model_estimate)
    draft_model_bytes: int = 0  # a draft model loaded beside it (ModelConfig.draft_model): its whole estimate

    @property
    def total_bytes(self) -> int:
        """With every chat full."""
        return (self.weights_bytes + self.kv_cache_bytes + self.overhead_bytes + self.prompt_copy_bytes
                + self.embedding_bytes + self.draft_model_bytes)

    @property
    def cpu_bytes(self) -> int:
        return self.total_bytes - self.gpu_bytes

    @property
    def device_bytes(self) -> int:
        """What the chosen device must hold with every chat full: VRAM on a GPU, RAM otherwise."""
        return self.gpu_bytes if self.on_gpu else self.total_bytes

    @property
    def after_load_bytes(self) -> int:
        """All of it (RAM and VRAM) right after load, before any chat is read."""
        return self.total_bytes - self.growth_bytes

    @property
    def device_after_load_bytes(self) -> int:
        """What the chosen device holds right after load."""
        return self.device_bytes - self.growth_bytes

    def kv_explanation(self) -> str:
        if self.config.slots == 1:
            return f"One KV cache of {self.kv_cells:,} positions for the one chat."
        if self.config.backend == "llamacpp":
            when = ", all reserved at load"
        else:
            when = "" if self.on_gpu else " (on the CPU they grow as the chats do)"
        return f"{self.config.slots} KV caches of {self.config.context_length:,} positions, one per chat{when}."


def kv_cache_bytes(model: ModelDescription, cells: int, bytes_per_element: float) -> int:
    """K and V: 2 x layers x KV heads x head dim x positions x bytes per element."""
    return int(2 * model.layers * model.kv_heads * model.head_dim * cells * bytes_per_element)

"""How much memory a model will take before it is loaded, and whether that fits.

`estimate` and `verdict` are pure functions of a ModelDescription, a ModelConfig
and the free and total bytes engine/catalog/devices.py reads from the machine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

from engine.catalog.description import ModelDescription
from engine.catalog.flash_rule import llamacpp_flash_attention
from engine.catalog.prompt_copy_rule import (
    PROMPT_COPY_BYTES_PER_PARAM,
    prompt_copy_wanted,
)
from engine.images import projector_path
from engine.protocol import ModelConfig

# The calibration (runtime bytes, activations, the GPU's extras) and where it was measured: engine/tuning.py.
from engine.tuning import (
    ACTIVATION_FLOATS_PER_DIM,
    CUDA_CONTEXT_BYTES,
    HF_GPU_RESERVE_FRACTION,
    HF_QUANT_RUNTIME_BYTES,
    HF_RUNTIME_BYTES,
    HF_TOKENIZER_BYTES_PER_TOKEN,
    LLAMA_RUNTIME_BYTES,
    TIGHT_FRACTION,
)
from engine.units import format_bytes

__all__ = ["PROMPT_COPY_BYTES_PER_PARAM", "Estimate", "Level", "Verdict", "estimate", "prompt_copy_wanted",
           "suggest", "verdict"]
KV_BYTES_PER_ELEMENT = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}  # ggml block sizes
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp32": 4, "fp16": 2, "bf16": 2}
# bitsandbytes: int8 keeps one fp32 scale per row (~0); 4-bit one fp32 absmax per 64 weights,
# or with double quantization an 8-bit absmax plus one fp32 per 256 blocks
QUANT_BYTES_PER_PARAM = {"int8": 1.0, "nf4": 0.5 + 4 / 64, "fp4": 0.5 + 4 / 64}
DOUBLE_QUANT_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)
LLAMA_UBATCH = 512  # llama.cpp's default micro-batch: n_ubatch = min(n_batch, 512)
CONTEXT_STEP = 256

Level = Literal["fits", "tight", "does not fit"]


@dataclass(frozen=True)
class Estimate:
    """Bytes a model needs with a given configuration, and where they go."""

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

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_cache_bytes + self.overhead_bytes + self.prompt_copy_bytes

    @property
    def cpu_bytes(self) -> int:
        return self.total_bytes - self.gpu_bytes

    @property
    def device_bytes(self) -> int:
        """What the chosen device must hold: VRAM on a GPU, RAM otherwise."""
        return self.gpu_bytes if self.on_gpu else self.total_bytes

    def kv_explanation(self) -> str:
        if self.config.slots == 1:
            return f"One KV cache of {self.kv_cells:,} positions for the one chat."
        if self.config.backend == "llamacpp":
            when = ", all reserved at load"
        else:
            when = "" if self.on_gpu else " (on the CPU they grow as the chats do)"
        return f"{self.config.slots} KV caches of {self.config.context_length:,} positions, one per chat{when}."


@dataclass(frozen=True)
class Verdict:
    level: Level
    message: str  # "Needs 1.2 GiB of 15.3 GiB free RAM."
    suggestion: str = ""  # the change that would make it fit; empty when it fits


# ---------------------------------------------------------------- the estimate


def estimate(model: ModelDescription, config: ModelConfig, *, has_gpu: bool, total_memory: int,
             projector_bytes: int | None = None) -> Estimate:
    """Weights + KV cache + runtime overhead for this model and configuration on a given machine.

    `has_gpu` resolves device "auto": a GPU is used when one is there. `total_memory` (the machine's
    RAM in bytes) decides, as the runner does, whether "auto" reads prompts with a copy; both are
    required, so no caller can size a model for a machine it did not name (engine/catalog/here.py
    fills them in for this one). `projector_bytes` sizes a vision projector that is not on disk yet (a
    Hub download's); by default it is the projector file the model would load with, if any.
    """
    if total_memory <= 0:
        raise ValueError(f"the memory estimate needs the machine's RAM, not {total_memory} bytes")
    on_gpu = config.device.startswith("cuda") or (config.device == "auto" and has_gpu)
    if config.backend == "llamacpp":
        return _estimate_llamacpp(model, config, on_gpu, total_memory, projector_bytes)
    return dataclasses.replace(_estimate_hf(model, config, on_gpu), total_memory=total_memory)


def kv_cache_bytes(model: ModelDescription, cells: int, bytes_per_element: float) -> int:
    """K and V: 2 x layers x KV heads x head dim x positions x bytes per element."""
    return int(2 * model.layers * model.kv_heads * model.head_dim * cells * bytes_per_element)


def _estimate_llamacpp(model: ModelDescription, config: ModelConfig, on_gpu: bool, total_memory: int,
                       projector_bytes: int | None) -> Estimate:
    if model.kind != "gguf":
        raise ValueError(f"llama.cpp loads GGUF files only, not the folder {model.path}")
    cells = config.context_length * config.slots  # one stream of context_length cells per chat, reserved at load
    kv = kv_cache_bytes(model, cells, KV_BYTES_PER_ELEMENT[config.kv_cache_type])
    layers = _gpu_layer_count(model, config.gpu_layers) if on_gpu else 0
    gpu_weights = sum(model.layer_bytes[model.layers - layers:]) if layers else 0
    output_on_gpu = on_gpu and (config.gpu_layers < 0 or config.gpu_layers > model.layers)
    if output_on_gpu:
        gpu_weights += model.output_bytes
    share = layers / model.layers if model.layers else 0.0
    cpu_overhead, gpu_overhead = _llamacpp_overhead(model, config, layers > 0, output_on_gpu)
    gpu = gpu_weights + int(kv * share) + gpu_overhead
    # The layers left on the CPU hold their Q4_0/Q4_K/IQ4_NL matrices twice: mapped from the file and
    # repacked (Q4_0 copy of the default model: 163 MiB of weights resident against 104 plain).
    repacked = int(model.repacked_bytes * (1.0 - share))
    projector = _projector_bytes(config) if projector_bytes is None else projector_bytes  # its weights load whole, on the GPU where the model's are
    if layers > 0:
        gpu += projector
    copy = 0
    if prompt_copy_wanted(config, layers > 0, model.quantization, model.n_params, total_memory)[0]:
        # F32 weights, one stream of context_length cells, the activations of a micro-batch with flash attention
        copy = (PROMPT_COPY_BYTES_PER_PARAM * model.n_params + kv // max(config.slots, 1)
                + min(config.batch_tokens, LLAMA_UBATCH) * model.embedding_length * 4 * ACTIVATION_FLOATS_PER_DIM)
    return Estimate(model.tensor_bytes + repacked + projector, kv, cpu_overhead + gpu_overhead, gpu, cells, on_gpu, layers,
                    model, config, repacked_bytes=repacked, prompt_copy_bytes=copy, total_memory=total_memory)


def _projector_bytes(config: ModelConfig) -> int:
    """The vision projector's file (mmproj-*.gguf beside the model, or the config's), 0 where there is none."""
    path = projector_path(config)
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def _gpu_layer_count(model: ModelDescription, gpu_layers: int) -> int:
    return model.layers if gpu_layers < 0 else min(gpu_layers, model.layers)


def _llamacpp_overhead(model: ModelDescription, config: ModelConfig, any_gpu: bool,
                       output_on_gpu: bool) -> tuple[int, int]:
    """Runtime bytes besides weights and KV cache: (in RAM, on the GPU).

    Calibrated on the CPU against process RSS growth (SmolLM2-135M Q4_1, see
    tests/engine/catalog/test_memory.py): the runtime and vocabulary (~16 MiB), the GGUF's
    metadata pages (mapped with the weights), one logits row per slot, and the
    activations of one micro-batch that a real step touches (~17 floats per
    embedding dimension per token with flash attention). Without flash attention
    (what "auto" takes on the CPU, catalog/flash_rule.py) the attention scores of a
    micro-batch over one chat's full cache (micro-batch x context length x heads, F32)
    come on top: each chat has a cache stream of its own, so a micro-batch's tokens
    attend over their own chat's cells only (random 1B shape, one chat filled to 3,905
    tokens: -2.3% against RSS with them, -6.4% without, docs/benchmarks.md). Where the
    prompt copy reads long prompts (with flash attention) this is an upper bound.
    On a GPU the compute buffer is allocated whole (logits of a full micro-batch),
    plus the CUDA context; those two are the rule of thumb, not measured here.
    """
    ubatch = min(config.batch_tokens, LLAMA_UBATCH)
    activations = ubatch * model.embedding_length * 4 * ACTIVATION_FLOATS_PER_DIM
    if llamacpp_flash_attention(config, any_gpu) == "off":
        activations += ubatch * config.context_length * model.heads * 4
    runtime = LLAMA_RUNTIME_BYTES + max(model.file_bytes - model.tensor_bytes, 0) + model.vocab_size * 4 * config.slots
    if not any_gpu:
        return runtime + activations, 0
    gpu = CUDA_CONTEXT_BYTES + activations + (ubatch * model.vocab_size * 4 if output_on_gpu else 0)
    return runtime, gpu


def _estimate_hf(model: ModelDescription, config: ModelConfig, on_gpu: bool) -> Estimate:
    dtype_bytes = _hf_dtype_bytes(config, on_gpu)
    if config.quantization == "none" or model.kind == "gguf":
        weights = model.n_params * dtype_bytes  # transformers dequantizes GGUF files
    else:
        per_param = DOUBLE_QUANT_BYTES_PER_PARAM if config.double_quant and config.quantization != "int8" \
            else QUANT_BYTES_PER_PARAM[config.quantization]
        quantized = model.n_params - model.unquantized_params
        weights = int(quantized * per_param) + model.unquantized_params * dtype_bytes
    cells = config.context_length * config.slots
    # the fast decode keeps one spare slot row for the padding of fixed-size steps (engine/runners/hf/decode.py)
    rows = config.slots + int(config.fast_decode == "on" or (config.fast_decode == "auto" and on_gpu))
    kv = kv_cache_bytes(model, config.context_length * rows, dtype_bytes)
    runtime, transient, gpu_extra = _hf_overhead(model, config, cells, dtype_bytes, weights + kv, on_gpu)
    gpu = weights + kv + transient + gpu_extra if on_gpu else 0
    return Estimate(weights, kv, runtime + transient + gpu_extra, gpu, cells, on_gpu,
                    model.layers if on_gpu else 0, model, config, transient)


def _hf_overhead(model: ModelDescription, config: ModelConfig, cells: int, dtype_bytes: int, tensors: int,
                 on_gpu: bool) -> tuple[int, int, int]:
    """Runtime bytes besides weights and KV cache: (resident in RAM, one step's transient, GPU-only).

    Calibrated on the CPU against process RSS growth after loading and after
    filling every slot (SmolLM2-135M and the tiny test model; fp32, int8, NF4; see
    tests/engine/catalog/test_memory_hf.py), measured after gc + malloc_trim so that it is
    memory in use, not freed blocks glibc keeps (the gauge may show up to ~150 MiB
    of those on top). The libraries themselves (torch and transformers imported:
    a few hundred MiB) are not counted, as llama.cpp's are not. Resident: code and
    modules that loading runs for the first time (~42 MiB; bitsandbytes' int8 state
    after its first matmuls ~20 MiB more), the tokenizer (per vocabulary entry).
    On the CPU the KV cache grows with the chats, from 256 positions per slot
    after loading. Transient, per step: hidden states and MLP activations of a
    full batch (~17 values per embedding dimension per token, as llama.cpp) and the
    attention mask with its float copies over every key of every slot.
    On a GPU (not measured here): the CUDA context and cuBLAS workspace
    (CUDA_CONTEXT_BYTES; nvidia-smi shows it, torch.cuda.memory_allocated does not)
    and the caching allocator's reserve (memory_reserved over memory_allocated,
    ~10% of the tensors); the KV cache is allocated whole there, at load.
    """
    tokenizer = model.vocab_size * HF_TOKENIZER_BYTES_PER_TOKEN["gguf" if model.kind == "gguf" else "hf"]
    quantized = config.quantization if model.kind == "hf" else "none"  # transformers dequantizes a GGUF
    runtime = HF_RUNTIME_BYTES + HF_QUANT_RUNTIME_BYTES[quantized] + tokenizer
    batch = min(config.batch_tokens, cells)
    activations = batch * model.embedding_length * dtype_bytes * ACTIVATION_FLOATS_PER_DIM
    transient = activations + batch * cells * (1 + 3 * dtype_bytes)
    gpu_extra = CUDA_CONTEXT_BYTES + int(HF_GPU_RESERVE_FRACTION * tensors) if on_gpu else 0
    return runtime, transient, gpu_extra


def _hf_dtype_bytes(config: ModelConfig, on_gpu: bool) -> int:
    if config.dtype != "auto":
        return DTYPE_BYTES[config.dtype]
    # what the HF runner picks for "auto": bf16 (fp16 before Ampere) on a GPU; float32 on the
    # CPU, where it decodes faster than bf16 (and transformers dequantizes GGUF files to it)
    return 2 if on_gpu else 4


# ---------------------------------------------------------------- the verdict


def verdict(result: Estimate, free_bytes: int, total_bytes: int) -> Verdict:
    """Fits, tight (over 70% of the device) or does not fit, and what would make it fit."""
    need = result.device_bytes
    where = "VRAM" if result.on_gpu else "RAM"
    message = f"Needs about {format_bytes(need)}; {format_bytes(free_bytes)} of {format_bytes(total_bytes)} {where} free."
    if need > free_bytes:
        return Verdict("does not fit", message, suggest(result, free_bytes))
    if need > TIGHT_FRACTION * total_bytes:
        return Verdict("tight", message, suggest(result, int(TIGHT_FRACTION * total_bytes)))
    return Verdict("fits", message)


def suggest(result: Estimate, budget: int) -> str:
    """The first single change that brings the device's share under `budget` bytes."""
    model, config = result.model, result.config
    if result.prompt_copy_bytes and _fits(result, budget, prompt_copy="off"):
        return "Turn the prompt reading copy off (long prompts are then read 2-2.5x slower)."
    context = _largest_context(result, budget)
    if context:
        return f"Lower the context to {context:,} tokens per chat."
    for slots in range(config.slots - 1, 0, -1):
        if _fits(result, budget, slots=slots):
            return f"Serve {slots} chat{'s' if slots > 1 else ''} in parallel instead of {config.slots}."
    if config.backend == "hf" and config.quantization in ("none", "int8") and _fits(result, budget, quantization="nf4"):
        return "Load it in 4-bit (NF4)."
    if config.backend == "llamacpp" and config.kv_cache_type == "f16" and _fits(result, budget, kv_cache_type="q4_0"):
        return "Use a q4_0 KV cache (needs flash attention)."
    if result.on_gpu and config.backend == "llamacpp":
        for layers in range(result.gpu_layers - 1, -1, -1):
            if _fits(result, budget, gpu_layers=layers):
                return f"Put {layers} of {model.layers} layers on the GPU; the rest run on the CPU, slower."
    return "Choose a smaller model, or a more strongly quantized file of this one."


def _fits(result: Estimate, budget: int, **change: object) -> bool:
    config = dataclasses.replace(result.config, **change)  # type: ignore[arg-type]
    return estimate(result.model, config, has_gpu=result.on_gpu, total_memory=result.total_memory).device_bytes <= budget


def _largest_context(result: Estimate, budget: int) -> int:
    """The longest context (a multiple of 256, as llama.cpp pads it) that fits; 0 if none does."""
    low, high = 0, (result.config.context_length - 1) // CONTEXT_STEP  # in steps; the estimate grows with context
    while low < high:
        middle = (low + high + 1) // 2
        if _fits(result, budget, context_length=middle * CONTEXT_STEP):
            low = middle
        else:
            high = middle - 1
    return low * CONTEXT_STEP

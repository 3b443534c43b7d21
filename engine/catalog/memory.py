"""How much memory a model will take before it is loaded, and whether that fits.

`estimate` and `verdict` are pure functions of a ModelDescription, a ModelConfig
and the free and total bytes engine/catalog/devices.py reads from the machine.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.catalog.description import ModelDescription, ModelReadError
from engine.catalog.estimate import KV_BYTES_PER_ELEMENT, Estimate, kv_cache_bytes
from engine.catalog.flash_rule import llamacpp_flash_attention
from engine.catalog.gguf import describe_gguf
from engine.catalog.hf_folder import describe_hf_folder
from engine.catalog.memory_hf import estimate_hf
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
    HF_RUNTIME_BYTES,
    LLAMA_RUNTIME_BYTES,
    TIGHT_FRACTION,
)
from engine.units import format_bytes

__all__ = ["KV_BYTES_PER_ELEMENT", "PROMPT_COPY_BYTES_PER_PARAM", "TIGHT_FRACTION", "Estimate", "Level", "Verdict",
           "both_figures", "embedding_model_estimate", "estimate", "kv_cache_bytes", "prompt_copy_wanted", "suggest",
           "verdict"]
LLAMA_UBATCH = 512  # llama.cpp's default micro-batch: n_ubatch = min(n_batch, 512)
CONTEXT_STEP = 256

Level = Literal["fits", "tight", "does not fit"]


@dataclass(frozen=True)
class Verdict:
    level: Level
    message: str  # "Needs about 1.0 GiB once loaded, up to 1.2 GiB with every chat full; 15.3 GiB of 31 GiB RAM free."
    suggestion: str = ""  # the change that would make it fit; empty when it fits


# ---------------------------------------------------------------- the estimate


def estimate(model: ModelDescription, config: ModelConfig, *, has_gpu: bool, total_memory: int,
             projector_bytes: int | None = None, draft: ModelDescription | None = None) -> Estimate:
    """Weights + KV cache + runtime overhead for this model and configuration on a given machine.

    `has_gpu` resolves device "auto": a GPU is used when one is there. `total_memory` (the machine's
    RAM in bytes) decides, as the runner does, whether "auto" reads prompts with a copy; both are
    required, so no caller can size a model for a machine it did not name (engine/catalog/here.py
    fills them in for this one). `projector_bytes` sizes a vision projector that is not on disk yet (a
    Hub download's); by default it is the projector file the model would load with, if any. `draft` likewise
    describes a draft model that is not on disk yet (config.draft_model names it); by default its file is read.
    """
    if total_memory <= 0:
        raise ValueError(f"the memory estimate needs the machine's RAM, not {total_memory} bytes")
    on_gpu = config.device.startswith("cuda") or (config.device == "auto" and has_gpu)
    if config.backend == "llamacpp":
        return _estimate_llamacpp(model, config, on_gpu, total_memory, projector_bytes, draft)
    return _with_hf_draft(dataclasses.replace(estimate_hf(model, config, on_gpu), total_memory=total_memory),
                          config, on_gpu, draft)


def _with_hf_draft(result: Estimate, config: ModelConfig, on_gpu: bool,
                   described: ModelDescription | None) -> Estimate:
    """The transformers model with its draft model (another transformers folder) loaded beside it, as the runner
    loads it: its own estimate at the model's settings, added (runners/hf/draft_model.py), less what the process
    pays once for both (the runtime's code, the CUDA context) and its step's transient buffers, which it
    allocates and frees before the model's step allocates its own."""
    if not config.draft_model:
        return result
    try:
        draft = described or describe_hf_folder(Path(config.draft_model))
    except (OSError, ModelReadError):
        return result  # loading says why
    own = estimate_hf(draft, dataclasses.replace(config, path=config.draft_model, draft_model=None), on_gpu)
    shared_gpu = CUDA_CONTEXT_BYTES if on_gpu else 0
    return dataclasses.replace(
        result, gpu_bytes=result.gpu_bytes + own.gpu_bytes - shared_gpu - (own.transient_bytes if on_gpu else 0),
        growth_bytes=result.growth_bytes + own.growth_bytes - own.transient_bytes,
        draft_model_bytes=own.total_bytes - HF_RUNTIME_BYTES - shared_gpu - own.transient_bytes)


def embedding_model_estimate(model: ModelDescription, total_memory: int, max_tokens: int) -> Estimate:
    """A GGUF embedding model as the documents' embedder loads it (engine/documents/embedder.py): on the CPU,
    one sequence of `max_tokens` read in one micro-batch, no prompt copy."""
    config = ModelConfig(path=model.path, context_length=max_tokens, slots=1, batch_tokens=max_tokens, device="cpu",
                         gpu_layers=0, prompt_copy="off")
    return estimate(model, config, has_gpu=False, total_memory=total_memory)


def _estimate_llamacpp(model: ModelDescription, config: ModelConfig, on_gpu: bool, total_memory: int,
                       projector_bytes: int | None, draft_description: ModelDescription | None = None) -> Estimate:
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
    cpu_overhead, gpu_overhead, compute_buffer = _llamacpp_overhead(model, config, layers > 0, output_on_gpu)
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
    draft = _draft_estimate(config, on_gpu, total_memory, draft_description)
    return Estimate(model.tensor_bytes + repacked + projector, kv, cpu_overhead + gpu_overhead,
                    gpu + (draft.gpu_bytes if draft else 0), cells, on_gpu, layers, model, config,
                    repacked_bytes=repacked, prompt_copy_bytes=copy, total_memory=total_memory,
                    growth_bytes=(0 if on_gpu else compute_buffer) + (draft.growth_bytes if draft else 0),
                    draft_model_bytes=draft.total_bytes if draft else 0)


def _draft_estimate(config: ModelConfig, on_gpu: bool, total_memory: int,
                    described: ModelDescription | None = None) -> Estimate | None:
    """The draft model's own estimate, with the model's settings (its context and chats, where its layers go), no
    prompt copy and no projector; None without one, or where its file cannot be read (loading says why)."""
    if not config.draft_model:
        return None
    try:
        draft = described or describe_gguf(Path(config.draft_model))
    except (OSError, ModelReadError):
        return None
    draft_config = dataclasses.replace(config, path=config.draft_model, draft_model=None, prompt_copy="off", mmproj=None)
    return _estimate_llamacpp(draft, draft_config, on_gpu, total_memory, projector_bytes=0)


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
                       output_on_gpu: bool) -> tuple[int, int, int]:
    """Runtime bytes besides weights and KV cache: (in RAM, on the GPU, the RAM's compute buffer).

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
    In RAM the compute buffer (activations and scores) is allocated at load but its pages
    become resident only as steps touch them: all of it once a long prompt is read; the
    KV cache is cleared at load, so it is resident from the start (bundled model, 4 x 4,096:
    473 MiB measured after load against 471 estimated without the compute buffer).
    """
    ubatch = min(config.batch_tokens, LLAMA_UBATCH)
    activations = ubatch * model.embedding_length * 4 * ACTIVATION_FLOATS_PER_DIM
    if llamacpp_flash_attention(config, any_gpu) == "off":
        activations += ubatch * config.context_length * model.heads * 4
    runtime = LLAMA_RUNTIME_BYTES + max(model.file_bytes - model.tensor_bytes, 0) + model.vocab_size * 4 * config.slots
    if not any_gpu:
        return runtime + activations, 0, activations
    gpu = CUDA_CONTEXT_BYTES + activations + (ubatch * model.vocab_size * 4 if output_on_gpu else 0)
    return runtime, gpu, 0


# ---------------------------------------------------------------- the verdict


def verdict(result: Estimate, free_bytes: int, total_bytes: int) -> Verdict:
    """Fits, tight (over 70% of the device) or does not fit, and what would make it fit.

    Judged on the figure with every chat full; the message gives the one right after load too."""
    need = result.device_bytes
    where = "VRAM" if result.on_gpu else "RAM"
    message = f"Needs about {both_figures(result)}; {format_bytes(free_bytes)} of {format_bytes(total_bytes)} {where} free."
    if need > free_bytes:
        return Verdict("does not fit", message, suggest(result, free_bytes))
    if need > TIGHT_FRACTION * total_bytes:
        return Verdict("tight", message, suggest(result, int(TIGHT_FRACTION * total_bytes)))
    return Verdict("fits", message)


def both_figures(result: Estimate, loaded: str = "once loaded") -> str:
    """"1.6 GiB once loaded, up to 1.9 GiB with every chat full" on the device; one figure where the two are one."""
    full, after_load = format_bytes(result.device_bytes), format_bytes(result.device_after_load_bytes)
    if full == after_load:
        return full
    return f"{after_load} {loaded}, up to {full} with every chat full"


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
    changed = estimate(result.model, config, has_gpu=result.on_gpu, total_memory=result.total_memory)
    return dataclasses.replace(changed, embedding_bytes=result.embedding_bytes).device_bytes <= budget


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

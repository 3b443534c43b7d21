"""The memory estimate for the transformers backend: weights by quantization, the slot caches, the runtime.

Calibrated on the CPU against process RSS growth (tests/engine/catalog/test_memory_hf.py); the
constants and where they were measured are in engine/tuning.py.
"""

from __future__ import annotations

from engine.catalog.description import ModelDescription
from engine.catalog.estimate import Estimate, kv_cache_bytes
from engine.protocol import ModelConfig
from engine.tuning import (
    ACTIVATION_FLOATS_PER_DIM,
    CUDA_CONTEXT_BYTES,
    HF_GPU_RESERVE_FRACTION,
    HF_QUANT_RUNTIME_BYTES,
    HF_RUNTIME_BYTES,
    HF_TOKENIZER_BYTES_PER_TOKEN,
)

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp32": 4, "fp16": 2, "bf16": 2}
# bitsandbytes: int8 keeps one fp32 scale per row (~0); 4-bit one fp32 absmax per 64 weights,
# or with double quantization an 8-bit absmax plus one fp32 per 256 blocks
QUANT_BYTES_PER_PARAM = {"int8": 1.0, "nf4": 0.5 + 4 / 64, "fp4": 0.5 + 4 / 64}
DOUBLE_QUANT_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)
# The positions per slot a CPU cache starts with (the warm-up step allocates them): the HF runner's
# GROWTH_STEP (engine/runners/hf/cache.py; a test holds the two equal).
CPU_CACHE_START_POSITIONS = 256


def estimate_hf(model: ModelDescription, config: ModelConfig, on_gpu: bool) -> Estimate:
    dtype_bytes = hf_dtype_bytes(config, on_gpu)
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
    growth = transient
    if not on_gpu and rows == config.slots:  # a CPU cache without the fast decode's spare row grows with the chats
        start = min(CPU_CACHE_START_POSITIONS, config.context_length)
        growth += kv - kv_cache_bytes(model, start * rows, dtype_bytes)
    return Estimate(weights, kv, runtime + transient + gpu_extra, gpu, cells, on_gpu,
                    model.layers if on_gpu else 0, model, config, transient, growth_bytes=growth)


def _hf_overhead(model: ModelDescription, config: ModelConfig, cells: int, dtype_bytes: int, tensors: int,
                 on_gpu: bool) -> tuple[int, int, int]:
    """Runtime bytes besides weights and KV cache: (resident in RAM, one step's transient, GPU-only).

    Calibrated on the CPU against process RSS growth after loading and after
    filling every slot (SmolLM2-135M and the tiny test model; fp32, int8, NF4; see
    tests/engine/catalog/test_memory_hf.py), measured after gc + malloc_trim so that it is
    memory in use, not freed blocks glibc keeps (the gauge may show up to ~150 MiB
    of those on top). The libraries themselves (torch and transformers imported:
    a few hundred MiB) are not counted, as llama.cpp's are not. Resident: code and
    modules that loading runs for the first time (~58 MiB, varying by ~20 MiB from run to run; bitsandbytes' int8 state
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


def hf_dtype_bytes(config: ModelConfig, on_gpu: bool) -> int:
    if config.dtype != "auto":
        return DTYPE_BYTES[config.dtype]
    # what the HF runner picks for "auto": bf16 (fp16 before Ampere) on a GPU; float32 on the
    # CPU, where it decodes faster than bf16 (and transformers dequantizes GGUF files to it)
    return 2 if on_gpu else 4

"""What a loaded llama.cpp model is and what is in effect: the facts behind ModelInfo.

Where llama.cpp decides something itself (flash attention "auto", how many
layers went to the GPU) the only place it says so is its log, so these read
the lines logged while loading; the settings asked for are the fallback.
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path

import llama_cpp

from engine.catalog.memory import KV_BYTES_PER_ELEMENT
from engine.catalog.model_files import known_name
from engine.protocol import ModelConfig, ModelInfo
from engine.runners.llamacpp.params import FLASH_ATTENTION

_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_DEVICE = re.compile(r"using device (\w+?)(\d*) \(([^)]*)\)")


def meta(model: int, key: str) -> str | None:
    buffer = ctypes.create_string_buffer(512)
    length = llama_cpp.llama_model_meta_val_str(model, key.encode("utf-8"), buffer, len(buffer))
    if length < 0:
        return None
    if length >= len(buffer):
        buffer = ctypes.create_string_buffer(length + 1)
        llama_cpp.llama_model_meta_val_str(model, key.encode("utf-8"), buffer, len(buffer))
    return buffer.value.decode("utf-8", errors="replace")


def _meta_int(model: int, key: str) -> int | None:
    value = meta(model, key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def chat_template(model: int) -> str | None:
    """The template the GGUF carries (tokenizer.chat_template); None for most base models."""
    value = llama_cpp.llama_model_chat_template(model, None)
    return value.decode("utf-8", errors="replace") if value else None


def metadata_name(model: int) -> str:
    """GGUF general.name: often a training run's label ("Smollm2 135M 8k Lc100K Mix1 Ep2"), so not the name shown."""
    return (meta(model, "general.name") or "").strip()


def quantization(model: int) -> str:
    """The file type ("Q4_1", "Q4_K_M"), as llama.cpp names it."""
    name = llama_cpp.llama_ftype_name(llama_cpp.llama_model_ftype(model))
    text = name.decode("utf-8", errors="replace") if name else ""
    text = text.replace("(guessed)", "").strip()
    if text and text.upper() != "UNKNOWN":
        return text.split()[-1] if text.startswith("MOSTLY") else text
    buffer = ctypes.create_string_buffer(256)
    llama_cpp.llama_model_desc(model, buffer, len(buffer))
    return buffer.value.decode("utf-8", errors="replace").split()[-1] if buffer.value else "unknown"


def head_dims(model: int) -> tuple[int, int]:
    """Key and value width of one attention head."""
    arch = meta(model, "general.architecture") or ""
    n_head = max(1, llama_cpp.llama_model_n_head(model))
    fallback = llama_cpp.llama_model_n_embd(model) // n_head
    key = _meta_int(model, f"{arch}.attention.key_length") or fallback
    value = _meta_int(model, f"{arch}.attention.value_length") or key
    return key, value


def kv_cache_bytes(model: int, cells: int, kv_cache_type: str) -> int:
    """K and V of every layer for every cell, at the cache type's bytes per element."""
    key, value = head_dims(model)
    per_cell = llama_cpp.llama_model_n_layer(model) * llama_cpp.llama_model_n_head_kv(model) * (key + value)
    return int(per_cell * cells * KV_BYTES_PER_ELEMENT[kv_cache_type])


def attention(config: ModelConfig, logged: list[str]) -> str:
    """What flash attention setting is in effect, read from llama.cpp's log; "(auto)" when auto chose it."""
    chosen = " (auto)" if config.flash_attention == "auto" else ""
    for line in reversed(logged):
        lowered = line.lower()
        if "flash attention" in lowered or "flash_attn" in lowered:
            if lowered.rstrip().endswith(("enabled", "= 1", "= true", "= on")):
                return "flash attention on" + chosen
            if lowered.rstrip().endswith(("disabled", "= 0", "= false", "= off")):
                return "flash attention off" + chosen
    asked = FLASH_ATTENTION[config.flash_attention]
    if asked == llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO:
        return "flash attention auto"
    return "flash attention on" if asked == llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED else "flash attention off"


def placement(config: ModelConfig, logged: list[str]) -> tuple[str, bool, tuple[str, ...]]:
    """(device, weights on a GPU, notes) from the build's abilities and what loading logged."""
    supported = bool(llama_cpp.llama_supports_gpu_offload())
    if config.gpu_layers == 0:
        return "cpu", False, ()
    if not supported:
        return "cpu", False, (
            "This llama.cpp build runs on the CPU only, so the GPU layers setting has no effect. "
            "To use an NVIDIA GPU, reinstall llama-cpp-python with CMAKE_ARGS=\"-DGGML_CUDA=on\" "
            "(it needs the CUDA toolkit; with a CUDA 13 driver, packaging/pip-install-llama.sh takes it from PyPI).",
        )
    offloaded, total = _offloaded_layers(logged)
    if offloaded == 0:
        return "cpu", False, ("No layers were placed on the GPU; the model runs on the CPU.",)
    notes: tuple[str, ...] = ()
    if total and offloaded is not None and offloaded < total:
        notes = (f"{offloaded} of {total} layers are on the GPU; the rest run on the CPU, which is slower.",)
    return _device_name(logged), True, notes


def _offloaded_layers(logged: list[str]) -> tuple[int | None, int | None]:
    for line in logged:
        found = _OFFLOADED.search(line)
        if found:
            return int(found.group(1)), int(found.group(2))
    return None, None


def _device_name(logged: list[str]) -> str:
    for line in logged:
        found = _DEVICE.search(line)
        if found:
            kind, index, description = found.groups()
            prefix = "cuda" if kind.upper().startswith("CUDA") else kind.lower()
            return f"{prefix}:{index or 0} ({description})"
    return "gpu"


def build_info(
    model: int, path: Path, config: ModelConfig, context_length: int, cells: int, logged: list[str]
) -> ModelInfo:
    device, offloaded, notes = placement(config, logged)
    trained = int(llama_cpp.llama_model_n_ctx_train(model))
    if trained and config.context_length > trained:
        notes += (f"The context was capped at {trained:,} tokens per chat, the length this model was trained on.",)
    return ModelInfo(
        name=known_name(path),
        path=str(path),
        backend="llamacpp",
        device=device,
        quantization=quantization(model),
        attention=attention(config, logged),
        context_length=context_length,
        slots=config.slots,
        model_bytes=int(llama_cpp.llama_model_size(model)),
        kv_cache_bytes=kv_cache_bytes(model, cells, config.kv_cache_type),
        gpu_offload=offloaded,
        trained_context_length=trained,
        n_params=int(llama_cpp.llama_model_n_params(model)),
        has_chat_template=chat_template(model) is not None,
        notes=notes,
        metadata_name=metadata_name(model),
    )

"""What a transformers model loaded for the runner is: the context it can use, whether the runner can
run it at all, and the ModelInfo the window and the API show.

Also giving the OS back what loading freed, so that the gauge shows what the model uses.
"""

from __future__ import annotations

import gc
from typing import Any

import torch

from engine.catalog.model_files import known_name
from engine.protocol import ModelConfig, ModelInfo
from engine.runners.base import RunnerError
from engine.runners.hf.load import Loaded
from engine.runners.hf.quant import attention_label, chosen_by_auto
from engine.runners.hf.text import chat_template


def check_supported(loaded: Loaded) -> None:
    text_config = loaded.model.config.get_text_config()
    layer_types = set(getattr(text_config, "layer_types", None) or ())
    unsupported = layer_types - {"full_attention", "sliding_attention"}
    if unsupported:
        raise RunnerError(
            f"{loaded.source.name}: layers of type {sorted(unsupported)} keep a recurrent state, which Hearth's "
            "batched transformers runner does not handle yet. A GGUF of this model may run with llama.cpp."
        )


def usable_context(requested: int, trained: int, text_config: Any, notes: list[str]) -> int:
    """The context per chat: what was asked, within what the model was trained on and looks back over;
    why it is less goes into `notes`."""
    context = requested
    if trained and context > trained:
        context = trained
        notes.append(f"The context was capped at {context:,} tokens per chat, the length this model was trained on.")
    window = getattr(text_config, "sliding_window", None)
    if isinstance(window, int) and 0 < window < context:
        # Our masks are full causal; beyond the window they would differ from the model's.
        context = window
        notes.append(f"The context was capped at {window:,} tokens per chat: this model only looks back that far "
                     "(its sliding window).")
    return max(16, context)


def describe(config: ModelConfig, loaded: Loaded, context_length: int, trained_context_length: int,
             kv_cache_bytes: int, notes: list[str]) -> ModelInfo:
    """The loaded model as shown to people (the runner adds its capabilities and, after warming up, its decode)."""
    device = loaded.device
    shown_device = str(device)
    attention = attention_label(loaded.attention, device, loaded.dtype)
    if attention == "SDPA (flash kernel)":
        notes.append("While several chats are answered at once, attention runs on a slower kernel than for one "
                     "chat alone (PyTorch's memory-efficient one, not flash). Answers are not affected.")
    if config.flash_attention == "auto":
        attention = chosen_by_auto(attention)
    if device.type == "cuda":
        shown_device = f"{shown_device} ({torch.cuda.get_device_name(device)})"
    model = loaded.model
    return ModelInfo(
        name=known_name(loaded.source.folder / loaded.source.gguf_file if loaded.source.gguf_file
                        else loaded.source.folder),
        path=config.path,
        backend="hf",
        device=shown_device,
        quantization=loaded.quantization,
        attention=attention,
        context_length=context_length,
        slots=config.slots,
        model_bytes=int(model.get_memory_footprint()),
        kv_cache_bytes=kv_cache_bytes,
        gpu_offload=device.type == "cuda",
        trained_context_length=trained_context_length,
        n_params=int(model.num_parameters()),
        has_chat_template=chat_template(loaded.tokenizer) is not None,
        notes=tuple(notes),
    )


def return_freed_memory() -> None:
    """Give the OS back what loading freed (glibc keeps it otherwise, a few hundred MiB after a 4-bit load
    of a small model: tests/engine/catalog/test_memory_hf.py), so the gauge shows what the model uses."""
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (macOS, Windows, musl): their allocators return memory themselves
        pass

"""The welcome shown in an empty chat: which model is loaded (and whether it can chat at all), how to add your own."""

from __future__ import annotations

import functools
from pathlib import Path

from app.status.gauge import NO_CHAT_TEMPLATE
from engine.catalog.default_model import DEFAULT_MODEL_NAME, default_model_path
from engine.protocol import ModelInfo


@functools.lru_cache(maxsize=1)
def _bundled_model() -> Path | None:
    """The bundled model's file, looked for once: finding it scans the installed packages (~0.1 s),
    and every new tab (a chat opened from the history too) asks for its welcome."""
    default = default_model_path()
    return Path(default).resolve() if default is not None else None


def welcome_text(info: ModelInfo) -> str:
    bundled = _bundled_model()
    is_default = bundled is not None and Path(info.path).resolve() == bundled
    where = "on the GPU" if info.gpu_offload else "on the CPU"
    if is_default:
        model = (f"The bundled {DEFAULT_MODEL_NAME} is loaded ({info.quantization}, {where}): "
                 "small and fast, good for trying things out, not for hard questions.")
    else:
        model = f"{Path(info.path).name} is loaded ({info.backend}, {info.quantization}, {where})."
    if not info.has_chat_template:
        model += "\n\n" + " ".join(NO_CHAT_TEMPLATE)
    return (f"Welcome to Hearth. {model}\n\n"
            "To get another model, open Model > Get models… (Ctrl+Shift+G): it searches the Hugging Face Hub "
            "and says which file fits this machine. Your own files: Model > Settings…, “Open GGUF file…” or "
            "“Open Hugging Face model folder…”.\n\n"
            f"Several chats can answer at the same time ({info.slots} at once): Ctrl+T opens another tab.")

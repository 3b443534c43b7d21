"""The gauge's lines for several loaded models: each one's memory, speed and chats, and the budget they share.

Read from EngineStats.models (the engine's per-model figures) and the ModelInfo of each (what was loaded);
the details popup shows them as table rows, one block per model ("Model details per model").
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Callable, Mapping

from engine.protocol import EngineStats, ModelInfo, ModelStats
from engine.units import format_bytes

Titles = Callable[[str], str]


def model_memory(model: ModelStats) -> int:
    return model.model_bytes + model.kv_cache_bytes + model.prompt_copy_bytes + model.draft_model_bytes


def estimate_text(info: ModelInfo | None) -> str:
    """The estimate it was loaded with: "1.6 GiB after load, up to 1.9 GiB with every chat full"; "" if none."""
    if info is None or not info.estimated_full_bytes:
        return ""
    full, after_load = format_bytes(info.estimated_full_bytes), format_bytes(info.estimated_after_load_bytes)
    if not info.estimated_after_load_bytes or after_load == full:
        return f"{full} with every chat full"
    return f"{after_load} after load, up to {full} with every chat full"


def embedding_models() -> list[tuple[str, int]]:
    """The documents' GGUF embedding models loaded in this process (the window's, beside the engine's models):
    (file name, the estimate's bytes for it)."""
    from engine.documents.embedder import loaded_embedders

    return [(Path(embedder.path).name, embedder.memory_bytes) for embedder in loaded_embedders()]


def embedding_rows() -> list[tuple[str, str]]:
    return [("Documents", f"embedding model {html.escape(name)}: {format_bytes(size)} in RAM (estimated)")
            for name, size in embedding_models()]


def voice_models() -> list[tuple[str, str, int]]:
    """The speech models and voices loaded in this process (dictation's, read aloud's, the local API's):
    (what it is, its name, the estimate's bytes for it)."""
    from engine.voice.loaded import loaded_voice_models

    return [(model.kind, model.name, model.memory_bytes) for model in loaded_voice_models()]


def voice_rows() -> list[tuple[str, str]]:
    return [("Voice", f"{kind} {html.escape(name)}: {format_bytes(size)} in RAM (estimated)")
            for kind, name, size in voice_models()]


def compact_text(stats: EngineStats | None) -> str:
    """The status bar's short form when more than one model is loaded: "2 models · 1.2 GiB of 10.5 GiB"."""
    if stats is None or len(stats.models) < 2:
        return ""
    used = sum(model_memory(model) for model in stats.models)
    budget = f" of {format_bytes(stats.budget_bytes)}" if stats.budget_bytes else ""
    return f"{len(stats.models)} models · {format_bytes(used)}{budget}"


def _state(model: ModelStats) -> str:
    if model.loading is not None:
        return f"loading {model.loading:.0%}"
    if model.chats:
        return "answering"
    kept = "pinned" if model.pinned else "idle"
    return f"{kept} for {model.idle_s / 60:.0f} min" if model.idle_s >= 60 else kept


def model_rows(stats: EngineStats | None, infos: Mapping[str, ModelInfo], titles: Titles) -> list[tuple[str, str]]:
    """One block per loaded model (its name, memory, speed, slots, chats, details), then the budget."""
    if stats is None or not stats.models:
        return []
    rows: list[tuple[str, str]] = []
    for model in stats.models:
        info = infos.get(model.path)
        rows.append((f"<u>{html.escape(model.name)}</u>", html.escape(_state(model))))
        rows.append(("&nbsp;&nbsp;Memory", f"{format_bytes(model_memory(model))} (model {format_bytes(model.model_bytes)}, "
                                           f"KV {format_bytes(model.kv_cache_bytes)})"))
        if estimate_text(info):
            rows.append(("&nbsp;&nbsp;Estimated", estimate_text(info)))
        rows.append(("&nbsp;&nbsp;Speed", f"{model.tokens_per_second:.1f} tok/s · slots {model.slots_busy}/{model.slots_total}"))
        if model.chats:
            rows.append(("&nbsp;&nbsp;Chats", html.escape(", ".join(titles(chat) for chat in model.chats))))
        if info is not None:
            rows.append(("&nbsp;&nbsp;Details", html.escape(" · ".join(
                part for part in (info.device, info.quantization, info.attention, f"{info.context_length} tokens per chat")
                if part))))
        rows.append(("&nbsp;&nbsp;File", html.escape(model.path)))
    used = sum(model_memory(model) for model in stats.models)
    budget = format_bytes(stats.budget_bytes) if stats.budget_bytes else "none"
    rows.append(("Budget", f"{format_bytes(used)} used of {budget}"))
    return rows

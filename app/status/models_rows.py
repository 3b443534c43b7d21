"""The gauge's lines for several loaded models: each one's memory, speed and chats, and the budget they share.

Read from EngineStats.models (the engine's per-model figures) and the ModelInfo of each (what was loaded);
the details popup shows them as table rows, one block per model ("Model details per model").
"""

from __future__ import annotations

import html
from typing import Callable, Mapping

from engine.protocol import EngineStats, ModelInfo, ModelStats
from engine.units import format_bytes

Titles = Callable[[str], str]


def model_memory(model: ModelStats) -> int:
    return model.model_bytes + model.kv_cache_bytes + model.prompt_copy_bytes


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

"""What the settings say about several models, in the engine's terms: keep-alive, the memory budget, EngineOptions.

The budget's default is the line the estimate draws between "fits" and "tight" (engine/catalog/memory.py:
70% of the memory models load into, a GPU's VRAM when one is used, else the RAM), so models that each
fit here also fit together.
"""

from __future__ import annotations

from engine.catalog.memory import TIGHT_FRACTION
from engine.hub.fit import target_memory
from engine.protocol import EngineOptions, ModelConfig

from app.settings.store import Settings

FOREVER = -1.0
GIB = 1 << 30


def keep_alive_s(settings: Settings) -> float:
    """Seconds an idle model stays loaded; negative: forever (pinned)."""
    minutes = settings.get("models.keep_alive_min")
    return FOREVER if minutes < 0 else minutes * 60.0


def default_budget_bytes(config: ModelConfig) -> int:
    memory, _ = target_memory(config)
    return int(memory.total_bytes * TIGHT_FRACTION)


def budget_bytes(settings: Settings, config: ModelConfig) -> int:
    gib = settings.get("models.budget_gib")
    return int(gib * GIB) if gib > 0 else default_budget_bytes(config)


def engine_options(settings: Settings, config: ModelConfig) -> EngineOptions:
    return EngineOptions(budget_bytes=budget_bytes(settings, config), default_keep_alive_s=keep_alive_s(settings))

"""Backends behind one engine. Imported lazily: torch only when asked for."""

from __future__ import annotations

from typing import Callable

from engine.protocol import ModelConfig
from engine.runners.base import Progress, Runner


def load_runner(config: ModelConfig, progress: Progress, cancelled: Callable[[], bool]) -> Runner:
    """Load the model the config names; raises RunnerError or LoadCancelled."""
    if config.backend == "hf":
        from engine.runners.hf.runner import HfRunner

        return HfRunner.load(config, progress, cancelled)
    from engine.runners.llamacpp.runner import LlamaCppRunner

    return LlamaCppRunner.load(config, progress, cancelled)

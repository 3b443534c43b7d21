"""Where Hearth keeps its settings: platformdirs' config folder, or `HEARTH_CONFIG_DIR` (tests use a tmp dir)."""

from __future__ import annotations

import os
from pathlib import Path

from engine.paths import user_path


def config_dir() -> Path:
    override = os.environ.get("HEARTH_CONFIG_DIR")
    if override:
        return Path(user_path(override))
    import platformdirs

    return platformdirs.user_config_path("Hearth", appauthor=False)

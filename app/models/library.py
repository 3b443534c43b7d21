"""The library the tabs' model pickers offer: every model Settings and Get models know, each with its fit here.

The same discovery as the settings dialog (engine/catalog/models.py: the bundled model, recent ones, the
models folder, the Hugging Face cache) and the same verdict as Get models (engine/catalog/memory.py, through
engine/hub/fit.py's target memory), at the settings' context and parallel chats. Found off the GUI thread.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from engine.catalog.description import ModelEntry
from engine.catalog.draft_kind import draft_for
from engine.catalog.memory import estimate, verdict
from engine.catalog.models import discover
from engine.hub.fit import target_memory
from engine.protocol import ModelConfig


@dataclass(frozen=True)
class LibraryModel:
    """One model a tab can choose: its path, the name users know, and whether it fits this machine."""

    path: str
    name: str
    level: str = ""  # "fits", "tight", "does not fit"; "" when it could not be judged
    message: str = ""  # "Needs about 1.0 GiB once loaded, up to 1.2 GiB with every chat full; 14.0 GiB of ..."


def config_for_path(base: ModelConfig, path: str, projectors: Mapping[str, str] | None = None,
                    draft_models: Mapping[str, str] | None = None) -> ModelConfig:
    """The settings' options (context, slots, threads...) for another model of the library, with the vision
    projector and the draft model chosen for it in the settings (`projectors`, `draft_models`: model path -> GGUF
    path, or a transformers folder drafting for a folder), never `base`'s: a draft model is chosen for one model's
    vocabulary."""
    folder = Path(path).is_dir()
    return dataclasses.replace(base, path=path, backend="hf" if folder else "llamacpp", gguf_file=None,
                               remote_model="", api_key="", mmproj=None if folder else (projectors or {}).get(path),
                               draft_model=draft_for("hf" if folder else "llamacpp", (draft_models or {}).get(path)))


def judge(entries: Sequence[ModelEntry], base: ModelConfig, projectors: Mapping[str, str] | None = None,
          draft_models: Mapping[str, str] | None = None) -> list[LibraryModel]:
    """Each described entry with its verdict at `base`'s context and slots (its draft model counted);
    undescribable ones are left out."""
    memory, on_gpu = target_memory(base)
    models = []
    for entry in entries:
        if entry.description is None:
            continue
        config = config_for_path(base, entry.path, projectors, draft_models)
        try:
            result = estimate(entry.description, config, has_gpu=on_gpu, total_memory=memory.total_bytes)
            answer = verdict(result, memory.free_bytes, memory.total_bytes)
            level: str = answer.level
            message = answer.message
        except (ValueError, ArithmeticError) as error:  # an odd header: still offered, not judged
            level, message = "", f"Its size could not be estimated ({error})."
        models.append(LibraryModel(entry.path, entry.description.name, level, message))
    return models


def find_library(recent: Sequence[str], base: ModelConfig, projectors: Mapping[str, str] | None = None,
                 draft_models: Mapping[str, str] | None = None) -> list[LibraryModel]:
    """The whole library, judged (slow: reads headers and the disk; run it off the GUI thread)."""
    return judge(discover(recent), base, projectors, draft_models)

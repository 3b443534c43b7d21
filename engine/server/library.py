"""The models the API can offer: the library (what the app lists, or one folder), names, aliases.

A model's id is the name users know it by (engine/catalog/model_files.known_name: the GGUF file's name
without .gguf, the folder's, a Hub download's "org/name"). A request's `model` is resolved here to a
loaded model, a library model to load, or nothing (the 404 lists the ids). Nothing here loads anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from engine.catalog.model_files import known_name
from engine.protocol import ModelInfo
from engine.server.options import ServerOptions


@dataclass(frozen=True)
class LibraryModel:
    id: str
    path: str
    backend: Literal["llamacpp", "hf"]


def model_id(info: ModelInfo) -> str:
    """What clients put in `model` for a loaded model."""
    if info.backend != "remote":
        return known_name(info.path)
    return Path(info.path).name or info.name  # as before several models: the server's host:port


def library(options: ServerOptions) -> list[LibraryModel]:
    """Every model the server may load by name, read from the disk now (new downloads show up)."""
    from engine.catalog.models import library_paths, scan_folder

    if options.models_dir:
        paths = [str(path) for path in scan_folder(Path(options.models_dir))]
    else:
        paths = [path for path, _ in library_paths(options.library, hf_cache=None)]
    return [LibraryModel(known_name(path), path, "hf" if Path(path).is_dir() else "llamacpp") for path in paths]


@dataclass(frozen=True)
class Resolved:
    """What a request's `model` means: a loaded model, a library model to load, or neither."""

    loaded: ModelInfo | None = None
    to_load: LibraryModel | None = None


def resolve(name: str, loaded: list[ModelInfo], entries: list[LibraryModel], options: ServerOptions) -> Resolved:
    """`loaded`: the loaded models, the one loaded last first. An alias is followed once."""
    target = dict(options.aliases).get(name, name)
    for info in loaded:
        if target in (model_id(info), info.name, info.path, Path(info.path).name):
            return Resolved(loaded=info)
    for entry in entries:
        if target in (entry.id, entry.path, Path(entry.path).name):
            return Resolved(to_load=entry)
    return Resolved()


def listed_ids(loaded: list[ModelInfo], entries: list[LibraryModel]) -> list[str]:
    """The loaded models' ids first (the one loaded last first), then the library's, each once."""
    ids = [model_id(info) for info in loaded] + [entry.id for entry in entries]
    return list(dict.fromkeys(ids))

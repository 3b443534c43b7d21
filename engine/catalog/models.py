"""Finding and describing models: a GGUF file or a Hugging Face folder, and where to look for them.

Describing never loads a model (engine/catalog/gguf.py reads a GGUF header,
engine/catalog/hf_folder.py a folder's config.json and safetensors headers);
discovery looks in the default model's package, the recent list, the models
folder and the Hugging Face cache, and never touches the network.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Literal, Sequence

from engine.catalog.default_model import default_model_path
from engine.catalog.description import ModelDescription, ModelEntry, ModelReadError
from engine.catalog.gguf import describe_gguf
from engine.catalog.hf_cache import downloaded_models
from engine.catalog.hf_folder import describe_hf_folder, is_hf_folder
from engine.catalog.model_files import whole_models
from engine.paths import user_path


def describe(path: str | os.PathLike[str]) -> ModelDescription:
    """Describe a GGUF file or a Hugging Face folder; raises ModelReadError."""
    target = Path(user_path(path))
    if not target.exists():
        raise ModelReadError(f"{target} does not exist. Check the path, or choose another model.")
    stat = target.stat()
    return _describe_cached(str(target), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=64)
def _describe_cached(path: str, mtime_ns: int, size: int) -> ModelDescription:
    # mtime and size are part of the key so that a replaced file is read again
    target = Path(path)
    if target.is_dir():
        return describe_hf_folder(target)
    return describe_gguf(target)


def models_folder() -> Path:
    """Where a user may drop GGUF files or HF folders: <user data dir>/Hearth/models."""
    import platformdirs

    return platformdirs.user_data_path("Hearth", appauthor=False) / "models"


def discover(recent: Sequence[str] = (), folder: Path | None = None,
             hf_cache: Path | None | Literal[False] = None) -> list[ModelEntry]:
    """Every model Hearth can offer, the default first; no network is touched.

    `hf_cache`: None for the Hugging Face cache (HF_HUB_CACHE, HF_HOME), False to skip it.
    """
    return [_entry(path, source) for path, source in library_paths(recent, folder, hf_cache)]


def library_paths(recent: Sequence[str] = (), folder: Path | None = None,
                  hf_cache: Path | None | Literal[False] = None) -> list[tuple[str, str]]:
    """discover's models as (path, where it was found), without reading them: the API's list of models."""
    found: list[tuple[str, str]] = []
    default = default_model_path()
    if default is not None:
        found.append((str(default), "Bundled default"))
    found += [(path, "Recently used") for path in recent if Path(path).exists()]
    found += [(str(path), "Models folder") for path in scan_folder(folder or models_folder())]
    if hf_cache is not False:
        found += [(str(path), "Downloaded") for path in _scan_hf_cache(hf_cache)]
    return _unique(found)


def _unique(found: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    seen: set[str] = set()
    unique = []
    for path, source in found:
        key = os.path.normcase(str(Path(path).resolve()))
        if key not in seen:
            seen.add(key)
            unique.append((path, source))
    return unique


def _entry(path: str, source: str) -> ModelEntry:
    try:
        return ModelEntry(path, source, describe(path))
    except ModelReadError as error:
        return ModelEntry(path, source, None, str(error))


def scan_folder(folder: Path) -> list[Path]:
    """Every model under `folder`: GGUF files (part 1 of a split one) and Hugging Face folders."""
    if not folder.is_dir():
        return []
    found = whole_models(sorted(folder.rglob("*.gguf")))
    found += sorted(config.parent for config in folder.rglob("config.json") if is_hf_folder(config.parent))
    return found


def _scan_hf_cache(cache: Path | None) -> list[Path]:
    return [Path(model.path) for model in downloaded_models(cache)]

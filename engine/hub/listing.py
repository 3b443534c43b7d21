"""A repo's files as the models one can download: each GGUF (a split one as one), or the safetensors folder.

The sizes and checksums come from the Hub's metadata (`model_info(files_metadata=True)`):
sha256 for LFS files, the git blob id for the small ones; the download checks both.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any, Literal

from engine.catalog.model_files import parse_split
from engine.hub.client import model_info
from engine.hub.quants import precision_rank, quant_from_name
from engine.hub.settings import HubSettings

# what a transformers folder needs at its top level; other weight formats (pickles, ONNX ...) stay on the Hub
FOLDER_SUFFIXES = (".json", ".safetensors", ".model", ".txt", ".jinja", ".tiktoken")
HF_QUANTIZATIONS = ("none", "int8", "nf4")  # full precision, then bitsandbytes 8-bit and 4-bit


@dataclass(frozen=True)
class HubFile:
    path: str  # inside the repo
    size: int
    sha256: str | None  # LFS files
    blob_id: str | None  # git object id (sha1 of "blob SIZE\0" + bytes)

    @property
    def etag(self) -> str:
        """The name of its blob in the cache, as huggingface_hub names it."""
        return self.sha256 or self.blob_id or ""


@dataclass(frozen=True)
class ModelChoice:
    """One way to get and load a model from the repo."""

    key: str  # stable id: the file (part 1) for GGUF, "safetensors:<quantization>" for a folder
    kind: Literal["gguf", "hf"]
    quant: str  # "Q4_K_M", "F16", ... or the bitsandbytes mode "none" / "int8" / "nf4"
    files: tuple[HubFile, ...]  # what is downloaded

    @property
    def download_bytes(self) -> int:
        return sum(file.size for file in self.files)

    @property
    def model_files(self) -> tuple[HubFile, ...]:
        """The model's own files: all of them but the vision projector."""
        return tuple(file for file in self.files if file is not self.projector)

    @property
    def model_bytes(self) -> int:
        return sum(file.size for file in self.model_files)

    @property
    def parts(self) -> int:
        return sum(1 for file in self.files if file.path.lower().endswith(".gguf") and not is_projector(file.path)) \
            if self.kind == "gguf" else 1

    @property
    def projector(self) -> HubFile | None:
        """The vision projector fetched with a GGUF model (llama.cpp reads pictures through it), if the repo has one."""
        return next((file for file in self.files if self.kind == "gguf" and is_projector(file.path)), None)

    def with_projector(self, projector: HubFile) -> ModelChoice:
        """The same model fetched with another of its folder's projectors (Get models lets the user pick one)."""
        return replace(self, files=(*self.model_files, projector))

    @property
    def label(self) -> str:
        if self.kind == "hf":
            return {"none": "safetensors, full precision", "int8": "safetensors, loaded in 8-bit",
                    "nf4": "safetensors, loaded in 4-bit NF4"}.get(self.quant, f"safetensors, {self.quant}")
        name = PurePosixPath(self.key).name
        name = f"{name} ({self.parts} parts)" if self.parts > 1 else name
        return f"{name} + vision projector" if self.projector else name


@dataclass(frozen=True)
class RepoListing:
    repo_id: str
    revision: str  # what was asked for ("main")
    commit: str  # what it resolved to: the snapshot folder's name
    gated: bool
    files: tuple[HubFile, ...]
    choices: tuple[ModelChoice, ...]  # most precise first

    def choice(self, key: str) -> ModelChoice:
        for choice in self.choices:
            if choice.key == key or PurePosixPath(choice.key).name == key:
                return choice
        raise KeyError(key)


def list_repo(repo_id: str, settings: HubSettings, revision: str | None = None) -> RepoListing:
    info = model_info(settings, repo_id, revision)
    return listing_from_info(info, revision or "main")


def listing_from_info(info: Any, revision: str) -> RepoListing:
    files = tuple(_hub_file(sibling) for sibling in info.siblings or ())
    choices = gguf_choices(files) + folder_choices(files)
    return RepoListing(info.id, revision, str(info.sha or revision), bool(info.gated), files, tuple(choices))


def _hub_file(sibling: Any) -> HubFile:
    lfs = sibling.lfs
    sha256 = lfs.sha256 if lfs is not None else None
    size = int(sibling.size if sibling.size is not None else (lfs.size if lfs is not None else 0))
    return HubFile(sibling.rfilename, size, sha256, sibling.blob_id)


def is_projector(path: str) -> bool:
    """A llama.cpp vision projector (mmproj-*.gguf, as llama.cpp's converters and the GGUF repos name them)."""
    name = PurePosixPath(path).name.lower()
    return name.endswith(".gguf") and "mmproj" in name


def gguf_choices(files: tuple[HubFile, ...]) -> list[ModelChoice]:
    """Every GGUF model: whole files, and split models gathered under their part 1, each with the vision
    projector of its folder where the repo has one."""
    by_path = {file.path: file for file in files}
    choices = []
    for file in files:
        if not file.path.lower().endswith(".gguf") or is_projector(file.path):
            continue  # mmproj files are vision projectors, not models one can chat with
        split = parse_split(file.path)
        if split is None:
            parts: tuple[HubFile, ...] = (file,)
        elif split.is_first and all(part in by_path for part in split.part_names()):
            parts = tuple(by_path[part] for part in split.part_names())
        else:
            continue
        projector = projector_for(file.path, files)
        choices.append(ModelChoice(file.path, "gguf", quant_from_name(file.path),
                                   parts + ((projector,) if projector else ())))
    return sorted(choices, key=lambda c: precision_rank(c.quant, c.download_bytes))


def projector_for(model_path: str, files: tuple[HubFile, ...]) -> HubFile | None:
    """The projector to fetch with a model: one in the model's own folder (where llama.cpp's loaders and Hearth look
    for it), the most precise first: F16 (what llama-server's -hf takes), then BF16, F32, Q8_0, then any."""
    found = projectors_for(model_path, files)
    return found[0] if found else None


def projectors_for(model_path: str, files: tuple[HubFile, ...]) -> tuple[HubFile, ...]:
    """Every projector in the model's folder, in that order: the one fetched unless the user picks another first."""
    folder = PurePosixPath(model_path).parent
    here = [file for file in files if is_projector(file.path) and PurePosixPath(file.path).parent == folder]
    return tuple(sorted(here, key=lambda file: (
        _PROJECTOR_ORDER.get(quant_from_name(file.path).upper(), len(_PROJECTOR_ORDER)), file.path)))


_PROJECTOR_ORDER = {"F16": 0, "BF16": 1, "F32": 2, "Q8_0": 3}


def folder_choices(files: tuple[HubFile, ...]) -> list[ModelChoice]:
    """A transformers folder (config.json + safetensors at the top): full precision, 8-bit, 4-bit."""
    top = [file for file in files if "/" not in file.path and file.path.lower().endswith(FOLDER_SUFFIXES)]
    names = {file.path for file in top}
    if "config.json" not in names or not any(name.endswith(".safetensors") for name in names):
        return []
    return [ModelChoice(f"safetensors:{mode}", "hf", mode, tuple(top)) for mode in HF_QUANTIZATIONS]

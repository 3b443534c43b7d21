"""A repo's files as the models one can download: each GGUF (a split one as one), or the safetensors folder.

The sizes and checksums come from the Hub's metadata (`model_info(files_metadata=True)`):
sha256 for LFS files, the git blob id for the small ones; the download checks both.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    def parts(self) -> int:
        return sum(1 for file in self.files if file.path.lower().endswith(".gguf")) if self.kind == "gguf" else 1

    @property
    def label(self) -> str:
        if self.kind == "hf":
            return {"none": "safetensors, full precision", "int8": "safetensors, loaded in 8-bit",
                    "nf4": "safetensors, loaded in 4-bit NF4"}.get(self.quant, f"safetensors, {self.quant}")
        name = PurePosixPath(self.key).name
        return f"{name} ({self.parts} parts)" if self.parts > 1 else name


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


def gguf_choices(files: tuple[HubFile, ...]) -> list[ModelChoice]:
    """Every GGUF model: whole files, and split models gathered under their part 1."""
    by_path = {file.path: file for file in files}
    choices = []
    for file in files:
        name = PurePosixPath(file.path).name
        if not name.lower().endswith(".gguf") or name.lower().startswith("mmproj"):
            continue  # mmproj files are vision projectors, not models one can chat with
        split = parse_split(file.path)
        if split is None:
            choices.append(ModelChoice(file.path, "gguf", quant_from_name(file.path), (file,)))
        elif split.is_first and all(part in by_path for part in split.part_names()):
            parts = tuple(by_path[part] for part in split.part_names())
            choices.append(ModelChoice(file.path, "gguf", quant_from_name(file.path), parts))
    return sorted(choices, key=lambda c: precision_rank(c.quant, c.download_bytes))


def folder_choices(files: tuple[HubFile, ...]) -> list[ModelChoice]:
    """A transformers folder (config.json + safetensors at the top): full precision, 8-bit, 4-bit."""
    top = [file for file in files if "/" not in file.path and file.path.lower().endswith(FOLDER_SUFFIXES)]
    names = {file.path for file in top}
    if "config.json" not in names or not any(name.endswith(".safetensors") for name in names):
        return []
    return [ModelChoice(f"safetensors:{mode}", "hf", mode, tuple(top)) for mode in HF_QUANTIZATIONS]

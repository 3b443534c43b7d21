"""The Hugging Face cache on this machine: where it is, which models it holds, and deleting one.

No network here. huggingface_hub's `scan_cache_dir` reads the layout every HF
tool shares (models--ORG--NAME/blobs, snapshots/COMMIT/..., refs/main); a model
is a GGUF file (part 1 standing for a split model) or a snapshot folder with
config.json and safetensors weights. Files still downloading live only as
blobs/*.incomplete, never in a snapshot, so they are never offered.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from engine.catalog.hf_folder import is_hf_folder
from engine.catalog.model_files import split_parts, whole_models


def cache_dir() -> Path:
    """HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub, read now.

    huggingface_hub reads these once, when it is imported; Hearth reads them on
    every call, so what a test or a user sets is what is used.
    """
    explicit = os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    if explicit:
        return Path(os.path.expandvars(explicit)).expanduser()
    return hf_home() / "hub"


def hf_home() -> Path:
    home = os.environ.get("HF_HOME")
    if home:
        return Path(os.path.expandvars(home)).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "huggingface"


@dataclass(frozen=True)
class DownloadedModel:
    """One model in the cache: what the model list offers and Delete removes."""

    repo_id: str
    commit: str
    path: str  # the GGUF file (part 1 of a split model) or the snapshot folder
    kind: Literal["gguf", "hf"]
    files: tuple[str, ...]  # paths inside the repo that make up this model
    size_bytes: int  # on disk
    refs: tuple[str, ...] = ()  # "main", ...

    @property
    def label(self) -> str:
        if self.kind == "hf":
            return self.repo_id
        return f"{self.repo_id} · {Path(self.files[0]).name}"


def downloaded_models(cache: Path | None = None) -> list[DownloadedModel]:
    """Every whole model in the cache, repo by repo; [] when there is no cache."""
    info = _scan(cache)
    if info is None:
        return []
    found: list[DownloadedModel] = []
    for repo in sorted(info.repos, key=lambda r: r.repo_id):
        if repo.repo_type != "model":
            continue
        for revision in sorted(repo.revisions, key=lambda r: r.commit_hash):
            found += _models_in(repo.repo_id, revision)
    return found


def _scan(cache: Path | None) -> Any:
    try:
        from huggingface_hub import scan_cache_dir
    except ImportError:  # the hub library comes with the transformers extra only
        return None
    try:
        return scan_cache_dir(cache if cache is not None else cache_dir())
    except Exception:  # CacheNotFound, or an unreadable cache: there is simply nothing to offer
        return None


def _models_in(repo_id: str, revision: Any) -> list[DownloadedModel]:
    snapshot = Path(revision.snapshot_path)
    sizes = {Path(file.file_path).relative_to(snapshot).as_posix(): int(file.size_on_disk) for file in revision.files}
    refs = tuple(sorted(revision.refs))
    found = []
    if is_hf_folder(snapshot):
        found.append(DownloadedModel(repo_id, revision.commit_hash, str(snapshot), "hf", tuple(sorted(sizes)),
                                     sum(sizes.values()), refs))
    ggufs = whole_models(sorted(snapshot / name for name in sizes if name.lower().endswith(".gguf")))
    for first in ggufs:
        names = [part.relative_to(snapshot).as_posix() for part in split_parts(first)]
        if all(name in sizes for name in names):  # a split model missing a part is not a model
            found.append(DownloadedModel(repo_id, revision.commit_hash, str(first), "gguf", tuple(names),
                                         sum(sizes[name] for name in names), refs))
    return found


def delete_downloaded(model: DownloadedModel, cache: Path | None = None) -> int:
    """Remove one model's files (and blobs nothing else uses); returns the bytes freed.

    A folder model is its whole revision: huggingface_hub's own delete strategy
    removes it with its refs. A GGUF file may share its revision with other
    quantizations: only its own links and blobs go, and the revision goes when
    nothing is left in it.
    """
    info = _scan(cache)
    if info is None:
        return 0
    repo = next((r for r in info.repos if r.repo_id == model.repo_id and r.repo_type == "model"), None)
    revision = next((r for r in repo.revisions if r.commit_hash == model.commit), None) if repo else None
    if repo is None or revision is None:
        return 0
    if model.kind == "hf" or set(model.files) >= _names(revision):
        return _delete_revision(info, repo, model.commit)
    return _delete_files(repo, revision, set(model.files))


def _names(revision: Any) -> set[str]:
    snapshot = Path(revision.snapshot_path)
    return {Path(file.file_path).relative_to(snapshot).as_posix() for file in revision.files}


def _delete_revision(info: Any, repo: Any, commit: str) -> int:
    strategy = info.delete_revisions(commit)
    freed = int(strategy.expected_freed_size)
    strategy.execute()
    snapshots = Path(repo.repo_path, "snapshots")
    if not snapshots.is_dir() or not any(snapshots.iterdir()):
        shutil.rmtree(repo.repo_path, ignore_errors=True)  # partial downloads of a repo that is gone go too
    return freed


def _delete_files(repo: Any, revision: Any, names: set[str]) -> int:
    snapshot = Path(revision.snapshot_path)
    doomed = [file for file in revision.files if Path(file.file_path).relative_to(snapshot).as_posix() in names]
    kept_blobs = {Path(file.blob_path) for rev in repo.revisions for file in rev.files if file not in doomed}
    freed = 0
    for file in doomed:
        Path(file.file_path).unlink(missing_ok=True)
        blob = Path(file.blob_path)
        if blob != Path(file.file_path) and blob not in kept_blobs and blob.exists():
            freed += blob.stat().st_size
            blob.unlink()
        elif blob == Path(file.file_path):  # no symlinks on this system: the file was the blob
            freed += int(file.size_on_disk)
    _remove_empty_folders(snapshot)
    return freed


def _remove_empty_folders(snapshot: Path) -> None:
    for folder in sorted((p for p in snapshot.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


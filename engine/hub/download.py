"""Downloading a model into the Hugging Face cache: resumable, verified, and all or nothing.

huggingface_hub 2.4's `hf_hub_download` writes each try to a new temporary file
and deletes it when the try fails, so nothing is resumed across runs, and it does
not check a file's sha256. This does both, in the cache layout every HF tool
reads: bytes arrive in blobs/ETAG.incomplete (resumed with a Range request after a
cancel, a crash or a dropped connection), are hashed as they arrive, and become
blobs/ETAG only if the hash is the one the Hub's metadata gives. The snapshot's
links, which are what makes a file visible as a model, are made only when every
file of the model has been verified.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Callable, Sequence

from engine.units import format_bytes
from engine.hub.cache_layout import CacheLayout
from engine.hub.checksum import Hasher, hash_file, mismatch
from engine.hub.errors import DownloadBusy, HubError, NotEnoughDisk, VerificationFailed
from engine.hub.listing import HubFile, ModelChoice, RepoListing
from engine.hub.progress import Meter, Progress
from engine.hub.remote import file_url
from engine.hub.settings import HubSettings
from engine.hub.transfer import receive_with_retries

DISK_MARGIN = 32 << 20
Cancelled = Callable[[], bool]


def fetch_choice(listing: RepoListing, choice: ModelChoice, settings: HubSettings,
                 on_progress: Progress | None = None, cancelled: Cancelled = lambda: False) -> str:
    """Download what `choice` needs; the local path to load: the GGUF file (part 1) or the snapshot folder."""
    snapshot = download(listing.repo_id, listing.revision, listing.commit, choice.files, settings,
                        on_progress, cancelled)
    return str(CacheLayout(settings.cache, listing.repo_id).in_snapshot(listing.commit, choice.key)) \
        if choice.kind == "gguf" else str(snapshot)


def download(repo_id: str, revision: str, commit: str, files: Sequence[HubFile], settings: HubSettings,
             on_progress: Progress | None = None, cancelled: Cancelled = lambda: False) -> Path:
    """Fetch `files` of `repo_id` at `commit` into the cache, verified; returns the snapshot folder.

    Files already in the cache are hashed again (another tool may have stored them
    unchecked) but not fetched: a model that is all there needs no network.
    """
    layout = CacheLayout(settings.cache, repo_id)
    _check_checksums(repo_id, files)
    layout.check_names(revision, commit, files)
    missing = [file for file in files if _present(layout, commit, file) is None]
    if missing:
        settings.check_reachable()
        _check_disk(layout, missing, repo_id)
    meter = Meter(repo_id, sum(file.size for file in files), on_progress)
    for file in files:
        _ensure_blob(layout, commit, file, settings, meter, cancelled)
    for file in files:  # only now does the model appear in the cache
        if layout.has_blob(file):
            layout.link(commit, file)
    layout.write_ref(revision, commit)
    meter.finish()
    return layout.snapshot(commit)


def _present(layout: CacheLayout, commit: str, file: HubFile) -> Path | None:
    """The file's complete bytes in the cache: its blob, or (where links are refused) the snapshot's copy."""
    if layout.has_blob(file):
        return layout.blob(file)
    target = layout.in_snapshot(commit, file.path)
    return target if layout.is_linked(commit, file) and not target.is_symlink() else None


def _check_checksums(repo_id: str, files: Sequence[HubFile]) -> None:
    unverifiable = [file.path for file in files if not file.etag]
    if unverifiable:
        raise VerificationFailed(f"The Hub gave no checksum for {unverifiable[0]} in {repo_id}, so it could not be "
                                 "verified after downloading; Hearth does not download files it cannot check.")


def free_disk_bytes(folder: Path) -> int:
    """Free bytes on the disk that holds `folder` (or its nearest existing parent)."""
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return shutil.disk_usage(folder).free


def _check_disk(layout: CacheLayout, files: Sequence[HubFile], repo_id: str) -> None:
    need = sum(max(file.size - layout.partial_size(file), 0) for file in files if not layout.has_blob(file))
    free = free_disk_bytes(layout.repo_folder)
    if need + DISK_MARGIN > free:
        raise NotEnoughDisk(f"Not enough disk space for {repo_id}: it needs {format_bytes(need)} more and "
                            f"{format_bytes(free)} are free where the Hugging Face cache is ({layout.cache}; "
                            "HF_HOME or HF_HUB_CACHE moves it). Nothing was downloaded; free some space and "
                            "try again.")


def _ensure_blob(layout: CacheLayout, commit: str, file: HubFile, settings: HubSettings, meter: Meter,
                 cancelled: Cancelled) -> None:
    """The verified bytes of `file`: already there (checked again), or fetched and checked."""
    from huggingface_hub.utils import WeakFileLock

    try:
        with WeakFileLock(layout.lock(file), timeout=2):
            present = _present(layout, commit, file)
            if present is not None:
                _verify_existing(present, file, meter, cancelled)
            else:
                _fetch(layout, commit, file, settings, meter, cancelled)
    except HubError:
        raise
    except Exception as error:
        if type(error).__name__ == "Timeout":  # filelock's
            raise DownloadBusy(f"{file.path} is being downloaded by another program (or another Hearth) right "
                               "now; wait for it to finish, then try again.") from error
        raise


def _verify_existing(path: Path, file: HubFile, meter: Meter, cancelled: Cancelled) -> None:
    # bytes another tool left (hf_hub_download does not check hashes) are trusted only once checked
    meter.stage, meter.file = "checking", file.path
    hasher = Hasher(file)
    hash_file(path, hasher, meter, cancelled)
    if not hasher.matches():
        path.unlink()
        raise mismatch(file, hasher, "already in the cache")
    meter.add_done(file.size, reused=True)


def _fetch(layout: CacheLayout, commit: str, file: HubFile, settings: HubSettings, meter: Meter,
           cancelled: Cancelled) -> None:
    partial = layout.partial(file)
    partial.parent.mkdir(parents=True, exist_ok=True)
    if partial.exists() and partial.stat().st_size > file.size:
        partial.unlink()  # longer than the file: not a beginning of it
    hasher = Hasher(file)
    meter.file = file.path
    if partial.exists():  # a download cancelled, cut off or crashed before: resume after its bytes
        meter.stage = "checking"
        hash_file(partial, hasher, meter, cancelled)
        meter.add_done(partial.stat().st_size, reused=True)
    meter.stage = "downloading"
    url = file_url(settings, layout.repo_id, commit, file.path)
    receive_with_retries(url, partial, file, hasher, settings, meter, cancelled)
    if not hasher.matches():
        partial.unlink()
        raise mismatch(file, hasher, "downloaded")
    os.replace(partial, layout.blob(file))


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

import errno
import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable, Sequence

from engine.units import format_bytes
from engine.hub.cache_layout import CacheLayout
from engine.hub.client import gated, headers, translate
from engine.hub.errors import (ConnectionLost, DownloadBusy, DownloadCancelled, FileNotOnHub, HubError, NotEnoughDisk,
                               VerificationFailed)
from engine.hub.listing import HubFile, ModelChoice, RepoListing
from engine.hub.progress import Meter, Progress
from engine.hub.remote import file_url
from engine.hub.settings import READ_TIMEOUT_S, HubSettings

CHUNK = 1 << 20
RETRIES = 2  # a dropped connection is resumed this many times before the user is told
RETRY_WAIT_S = (0.5, 1.5)
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
    _hash_file(path, hasher, meter, cancelled)
    if not hasher.matches():
        path.unlink()
        raise _mismatch(file, hasher, "already in the cache")
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
        _hash_file(partial, hasher, meter, cancelled)
        meter.add_done(partial.stat().st_size, reused=True)
    meter.stage = "downloading"
    url = file_url(settings, layout.repo_id, commit, file.path)
    _receive_with_retries(url, partial, file, hasher, settings, meter, cancelled)
    if not hasher.matches():
        partial.unlink()
        raise _mismatch(file, hasher, "downloaded")
    os.replace(partial, layout.blob(file))


def _mismatch(file: HubFile, hasher: "Hasher", what: str) -> VerificationFailed:
    kind = "sha256" if file.sha256 else "git object id"
    return VerificationFailed(f"{file.path} was {what}, but its {kind} is {hasher.hexdigest()[:16]}…, not "
                              f"{file.etag[:16]}… as the Hub says: the file is damaged (or was altered on the way) "
                              "and has been deleted. Nothing was added to your models; download it again.")


def _receive_with_retries(url: str, partial: Path, file: HubFile, hasher: "Hasher", settings: HubSettings,
                          meter: Meter, cancelled: Cancelled) -> None:
    for attempt in range(RETRIES + 1):
        have = partial.stat().st_size if partial.exists() else 0
        if have >= file.size:
            return
        try:
            _receive(url, partial, have, file, hasher, settings, meter, cancelled)
            return
        except _Dropped as dropped:
            if attempt == RETRIES:
                done = partial.stat().st_size if partial.exists() else 0
                raise ConnectionLost(f"The connection to the Hub was lost while downloading {file.path} "
                                     f"({dropped.reason}), with {format_bytes(done)} of {format_bytes(file.size)} "
                                     "received. What arrived is kept: download again to resume from there.") \
                    from dropped
            _wait(RETRY_WAIT_S[min(attempt, len(RETRY_WAIT_S) - 1)], cancelled)


class _Dropped(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _wait(seconds: float, cancelled: Cancelled) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cancelled():
            raise DownloadCancelled("Download cancelled; what arrived is kept for the next try.")
        time.sleep(0.05)


def _receive(url: str, partial: Path, have: int, file: HubFile, hasher: "Hasher", settings: HubSettings,
             meter: Meter, cancelled: Cancelled) -> None:
    from huggingface_hub.utils import get_session

    request = {**headers(settings), "Range": f"bytes={have}-", "Accept-Encoding": "identity"}
    try:
        with get_session().stream("GET", url, headers=request, timeout=READ_TIMEOUT_S) as response:
            have = _start_at(response, partial, have, file, hasher, settings, meter)
            with _open_partial(partial, have) as stream:
                _copy(response, stream, have, file, hasher, meter, cancelled)
    except (HubError, _Dropped):
        raise
    except OSError as error:
        if error.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
            raise NotEnoughDisk(f"The disk filled up while downloading {file.path}. What arrived is kept "
                                "(not offered as a model): free some space and download again to resume.") from error
        if _is_network(error):
            raise _Dropped(str(error) or type(error).__name__) from error
        raise HubError(f"Writing {partial} failed: {error}") from error
    except Exception as error:
        if _is_network(error):
            raise _Dropped(" ".join(str(error).split()) or type(error).__name__) from error
        raise translate(error, settings, None) from error


def _is_network(error: BaseException) -> bool:
    names = {cls.__name__ for cls in type(error).__mro__}
    return bool(names & {"TransportError", "TimeoutException", "NetworkError", "RemoteProtocolError"}) or \
        isinstance(error, (ConnectionError, TimeoutError))


def _start_at(response: Any, partial: Path, have: int, file: HubFile, hasher: "Hasher", settings: HubSettings,
              meter: Meter) -> int:
    """Where the bytes of this response start in the file; refuses an error response with its reason."""
    status = response.status_code
    if status in (401, 403):
        raise gated(settings, meter.repo_id, status)
    if status == 404:
        raise FileNotOnHub(f"{file.path} is no longer in {meter.repo_id} at this revision; list its files again.")
    if status >= 400:
        raise _Dropped(f"the server answered {status}") if status >= 500 else \
            HubError(f"The Hub refused {file.path} ({status}).")
    if status == 206 and _range_start(response) == have:
        return have
    # a whole file (200) although a range was asked for: start again from zero
    meter.add_done(-have, reused=False)
    hasher.reset()
    partial.unlink(missing_ok=True)
    return 0


def _range_start(response: Any) -> int:
    value = response.headers.get("Content-Range", "")  # "bytes 100-199/200"
    try:
        return int(value.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return -1


def _open_partial(partial: Path, have: int) -> BinaryIO:
    """The .incomplete file, positioned to append after the `have` bytes already there."""
    stream = open(partial, "r+b" if have else "wb")
    stream.seek(have)
    stream.truncate()
    return stream


def _copy(response: Any, stream: BinaryIO, have: int, file: HubFile, hasher: "Hasher", meter: Meter,
          cancelled: Cancelled) -> None:
    for chunk in response.iter_bytes(CHUNK):
        if cancelled():
            raise DownloadCancelled(f"Download cancelled with {format_bytes(have)} of {format_bytes(file.size)} of "
                                    f"{file.path} received; they are kept, and the next download resumes there.")
        chunk = chunk[: file.size - have]  # never more than the file is
        stream.write(chunk)
        hasher.update(chunk)
        have += len(chunk)
        meter.add_done(len(chunk), reused=False, file=file.path)
        if have >= file.size:
            return
    raise _Dropped(f"the server sent {format_bytes(have)} of {format_bytes(file.size)} and stopped")


def _hash_file(path: Path, hasher: "Hasher", meter: Meter, cancelled: Cancelled) -> None:
    with open(path, "rb") as stream:
        while chunk := stream.read(8 * CHUNK):
            if cancelled():
                raise DownloadCancelled("Download cancelled while checking what was already on disk.")
            hasher.update(chunk)
            meter.tick()


class Hasher:
    """sha256 for LFS files; git's object id (sha1 of "blob SIZE\\0" + bytes) for the small ones."""

    def __init__(self, file: HubFile) -> None:
        self.file = file
        self.reset()

    def reset(self) -> None:
        if self.file.sha256:
            self._hash = hashlib.sha256()
        else:
            self._hash = hashlib.sha1(f"blob {self.file.size}\0".encode())

    def update(self, data: bytes) -> None:
        self._hash.update(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def matches(self) -> bool:
        return self.hexdigest() == self.file.etag.lower()

"""Receiving one file's bytes from the Hub over HTTP: Range resume, retries and error statuses.

Separate from the download's bookkeeping (what to fetch, disk space, locks,
verification, the snapshot's links) because this part changes with the wire:
the HTTP client, how a dropped connection is recognised and resumed, what each
status code means. It appends to the .incomplete file and feeds every byte to
the hasher; whether the result is kept is the caller's decision.
"""

from __future__ import annotations

import errno
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable

from engine.units import format_bytes
from engine.hub.checksum import Hasher
from engine.hub.client import gated, headers, translate
from engine.hub.errors import ConnectionLost, DownloadCancelled, FileNotOnHub, HubError, NotEnoughDisk
from engine.hub.listing import HubFile
from engine.hub.progress import Meter
from engine.hub.settings import READ_TIMEOUT_S, HubSettings

CHUNK = 1 << 20
RETRIES = 2  # a dropped connection is resumed this many times before the user is told
RETRY_WAIT_S = (0.5, 1.5)
Cancelled = Callable[[], bool]


def receive_with_retries(url: str, partial: Path, file: HubFile, hasher: Hasher, settings: HubSettings,
                         meter: Meter, cancelled: Cancelled) -> None:
    """Append the rest of `file` to `partial`, resuming after a dropped connection up to RETRIES times."""
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


def _receive(url: str, partial: Path, have: int, file: HubFile, hasher: Hasher, settings: HubSettings,
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


def _start_at(response: Any, partial: Path, have: int, file: HubFile, hasher: Hasher, settings: HubSettings,
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


def _copy(response: Any, stream: BinaryIO, have: int, file: HubFile, hasher: Hasher, meter: Meter,
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

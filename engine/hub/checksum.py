"""What a Hub file's bytes must hash to, and hashing bytes already on disk.

Separate from the download because it changes for a different reason: the Hub's
checksum rules (sha256 for LFS files, git's object id for small ones) are one
thing, fetching and placing files in the cache another; both the check of a
cached file and the check of a fresh download use these.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

from engine.hub.errors import DownloadCancelled, VerificationFailed
from engine.hub.listing import HubFile
from engine.hub.progress import Meter

READ_CHUNK = 8 << 20
Cancelled = Callable[[], bool]


def hash_file(path: Path, hasher: Hasher, meter: Meter, cancelled: Cancelled) -> None:
    """Feed the bytes of `path` to `hasher`, ticking the meter; stops on a cancel."""
    with open(path, "rb") as stream:
        while chunk := stream.read(READ_CHUNK):
            if cancelled():
                raise DownloadCancelled("Download cancelled while checking what was already on disk.")
            hasher.update(chunk)
            meter.tick()


def mismatch(file: HubFile, hasher: Hasher, what: str) -> VerificationFailed:
    """The error for bytes whose hash is not the one the Hub gave; `what` says where they came from."""
    kind = "sha256" if file.sha256 else "git object id"
    return VerificationFailed(f"{file.path} was {what}, but its {kind} is {hasher.hexdigest()[:16]}…, not "
                              f"{file.etag[:16]}… as the Hub says: the file is damaged (or was altered on the way) "
                              "and has been deleted. Nothing was added to your models; download it again.")


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

"""The Hugging Face cache's layout for one repo, as huggingface_hub writes and reads it.

    <cache>/models--ORG--NAME/blobs/<etag>            the file's bytes (etag: sha256 for LFS files)
    <cache>/models--ORG--NAME/blobs/<etag>.incomplete  bytes still arriving
    <cache>/models--ORG--NAME/snapshots/<commit>/<path> a link to the blob: what tools load
    <cache>/models--ORG--NAME/refs/main               the commit "main" pointed at
    <cache>/.locks/models--ORG--NAME/<etag>.lock      one writer per blob at a time

Every name in these paths comes from the Hub (or whatever HF_ENDPOINT points at), so each is
checked before it is used: an ETag is a hex digest, a commit one path component, a file name
and a revision relative paths without `..`, backslashes or drive letters. A name that fails
raises UnsafeHubPath and nothing is written.
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path, PurePosixPath
from typing import Sequence

from engine.hub.errors import UnsafeHubPath
from engine.hub.listing import HubFile

_DIGEST = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")  # a git blob id (sha1) or an LFS sha256


class CacheLayout:
    def __init__(self, cache: Path, repo_id: str) -> None:
        parts = repo_id.split("/")
        if not 1 <= len(parts) <= 2 or not all(_is_component(part) for part in parts):
            raise UnsafeHubPath(f"{repo_id!r} is not a repo name (owner/name); nothing was downloaded.")
        self.cache = cache
        self.repo_id = repo_id
        self.repo_folder = cache / ("models--" + repo_id.replace("/", "--"))

    def blob(self, file: HubFile) -> Path:
        return self.repo_folder / "blobs" / _etag(file)

    def partial(self, file: HubFile) -> Path:
        return self.repo_folder / "blobs" / f"{_etag(file)}.incomplete"

    def lock(self, file: HubFile) -> Path:
        path = self.cache / ".locks" / self.repo_folder.name / f"{_etag(file)}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def snapshot(self, commit: str) -> Path:
        if not _is_component(commit):
            raise UnsafeHubPath(f"The Hub named the revision's commit {commit!r}, which is not a commit id; "
                                "nothing was downloaded. Is HF_ENDPOINT pointing at a server you trust?")
        return self.repo_folder / "snapshots" / commit

    def check_names(self, revision: str, commit: str, files: Sequence[HubFile]) -> None:
        """Every name a download will use, checked before anything is fetched or written."""
        if revision != commit:
            _inside(self.repo_folder / "refs", revision, "revision")
        for file in files:
            _etag(file)
            self.in_snapshot(commit, file.path)

    def in_snapshot(self, commit: str, path: str) -> Path:
        """Where a repo file lies in the snapshot; refused when its name would lead out of it."""
        return _inside(self.snapshot(commit), path, "file name")

    def has_blob(self, file: HubFile) -> bool:
        blob = self.blob(file)
        return blob.is_file() and blob.stat().st_size == file.size

    def partial_size(self, file: HubFile) -> int:
        partial = self.partial(file)
        return partial.stat().st_size if partial.is_file() else 0

    def is_linked(self, commit: str, file: HubFile) -> bool:
        """In the snapshot with the right size: a finished download (the link is made after verifying)."""
        target = self.in_snapshot(commit, file.path)
        return target.is_file() and target.stat().st_size == file.size

    def link(self, commit: str, file: HubFile) -> None:
        """Make the verified blob visible in the snapshot, as a relative link (a move where links are refused)."""
        blob, target = self.blob(file), self.in_snapshot(commit, file.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or target.exists():
            target.unlink()
        try:
            os.symlink(os.path.relpath(blob, target.parent), target)
        except OSError:  # Windows without developer mode: huggingface_hub moves the new blob too
            os.replace(blob, target)

    def write_ref(self, revision: str, commit: str) -> None:
        if revision == commit:
            return
        ref = _inside(self.repo_folder / "refs", revision, "revision")
        ref.parent.mkdir(parents=True, exist_ok=True)
        if ref.is_file() and ref.read_text(encoding="utf-8").strip() == commit:
            return
        temporary = ref.with_name(f"{ref.name}.{uuid.uuid4().hex[:8]}.tmp")
        temporary.write_text(commit, encoding="utf-8")
        os.replace(temporary, ref)  # readers never see half a ref


def _is_component(name: str) -> bool:
    """One plain path component: not empty, not . or .., no separator, drive or NUL."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\:\0")


def _etag(file: HubFile) -> str:
    if not _DIGEST.fullmatch(file.etag):
        raise UnsafeHubPath(f"The Hub gave {file.path} the checksum {file.etag[:80]!r}, which is not a sha256 or a "
                            "git object id; it was not downloaded. Is HF_ENDPOINT pointing at a server you trust?")
    return file.etag


def _inside(base: Path, relative: str, what: str) -> Path:
    """`base / relative` where `relative` is a relative POSIX path of plain components: it cannot leave `base`."""
    parts = PurePosixPath(relative).parts
    if not parts or relative.startswith("/") or not all(_is_component(part) for part in parts):
        raise UnsafeHubPath(f"The Hub named a {what} {relative[:200]!r} that would be written outside the model's "
                            "folder in the cache; nothing was downloaded. Is HF_ENDPOINT pointing at a server you "
                            "trust?")
    return base.joinpath(*parts)

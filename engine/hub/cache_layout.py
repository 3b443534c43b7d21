"""The Hugging Face cache's layout for one repo, as huggingface_hub writes and reads it.

    <cache>/models--ORG--NAME/blobs/<etag>            the file's bytes (etag: sha256 for LFS files)
    <cache>/models--ORG--NAME/blobs/<etag>.incomplete  bytes still arriving
    <cache>/models--ORG--NAME/snapshots/<commit>/<path> a link to the blob: what tools load
    <cache>/models--ORG--NAME/refs/main               the commit "main" pointed at
    <cache>/.locks/models--ORG--NAME/<etag>.lock      one writer per blob at a time
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from engine.hub.listing import HubFile


class CacheLayout:
    def __init__(self, cache: Path, repo_id: str) -> None:
        self.cache = cache
        self.repo_id = repo_id
        self.repo_folder = cache / ("models--" + repo_id.replace("/", "--"))

    def blob(self, file: HubFile) -> Path:
        return self.repo_folder / "blobs" / file.etag

    def partial(self, file: HubFile) -> Path:
        return self.repo_folder / "blobs" / f"{file.etag}.incomplete"

    def lock(self, file: HubFile) -> Path:
        path = self.cache / ".locks" / self.repo_folder.name / f"{file.etag}.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def snapshot(self, commit: str) -> Path:
        return self.repo_folder / "snapshots" / commit

    def has_blob(self, file: HubFile) -> bool:
        blob = self.blob(file)
        return blob.is_file() and blob.stat().st_size == file.size

    def partial_size(self, file: HubFile) -> int:
        partial = self.partial(file)
        return partial.stat().st_size if partial.is_file() else 0

    def is_linked(self, commit: str, file: HubFile) -> bool:
        """In the snapshot with the right size: a finished download (the link is made after verifying)."""
        target = self.snapshot(commit) / file.path
        return target.is_file() and target.stat().st_size == file.size

    def link(self, commit: str, file: HubFile) -> None:
        """Make the verified blob visible in the snapshot, as a relative link (a move where links are refused)."""
        blob, target = self.blob(file), self.snapshot(commit) / file.path
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
        ref = self.repo_folder / "refs" / revision
        ref.parent.mkdir(parents=True, exist_ok=True)
        if ref.is_file() and ref.read_text(encoding="utf-8").strip() == commit:
            return
        temporary = ref.with_name(f"{ref.name}.{uuid.uuid4().hex[:8]}.tmp")
        temporary.write_text(commit, encoding="utf-8")
        os.replace(temporary, ref)  # readers never see half a ref

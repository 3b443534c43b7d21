"""A stand-in Hugging Face Hub: a real HTTP server on 127.0.0.1 answering what huggingface_hub asks.

Endpoints (as the Hub answers them, checked against huggingface_hub 2.4's client):
HEAD/GET /{repo}/resolve/{rev}/{path} (X-Repo-Commit, ETag / X-Linked-Etag, Content-Length /
X-Linked-Size, Range -> 206 / 416), GET /api/models/{repo}[/revision/{rev}] (?blobs=true adds
sizes, git ids and LFS sha256), GET /api/models/{repo}/tree/{rev}, POST .../paths-info/{rev},
GET /api/models?search=&filter=&pipeline_tag=&sort=&limit=. Errors carry X-Error-Code the way
the Hub sends them (RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound).

It serves real files, counts the bytes it sends, and can misbehave on purpose: flip a byte,
drop the connection (and go away) after some bytes, go slow, or be offline.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

LFS_SUFFIXES = (".gguf", ".safetensors", ".bin")
READ_BLOCK = 256 << 10
POLL_S = 0.02  # how often serve_forever looks for shutdown(): its default 0.5 s is every test's teardown


@dataclass
class StandInFile:
    path: str
    source: Path | bytes

    def __post_init__(self) -> None:
        self.size = len(self.source) if isinstance(self.source, bytes) else self.source.stat().st_size
        digest_sha256, digest_git = hashlib.sha256(), hashlib.sha1(f"blob {self.size}\0".encode())
        for block in self.blocks(0, self.size):
            digest_sha256.update(block)
            digest_git.update(block)
        self.sha256 = digest_sha256.hexdigest()
        self.lfs = self.path.endswith(LFS_SUFFIXES)
        pointer = f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {self.size}\n".encode()
        self.pointer_size = len(pointer)
        # for an LFS file git stores the pointer; its object id is the pointer's
        self.git_oid = hashlib.sha1(f"blob {len(pointer)}\0".encode() + pointer).hexdigest() if self.lfs \
            else digest_git.hexdigest()

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.git_oid

    def blocks(self, start: int, end: int):  # noqa: ANN201 - a generator of bytes
        if isinstance(self.source, bytes):
            yield self.source[start:end]
            return
        with open(self.source, "rb") as stream:
            stream.seek(start)
            while start < end:
                block = stream.read(min(READ_BLOCK, end - start))
                if not block:
                    return
                start += len(block)
                yield block


@dataclass
class StandInRepo:
    repo_id: str
    files: dict[str, StandInFile]
    tags: list[str]
    downloads: int = 0
    likes: int = 0
    last_modified: str = "2026-11-01T10:00:00.000Z"
    gated: bool = False
    token: str | None = None  # a gated repo lets this token download
    pipeline_tag: str = "text-generation"
    library_name: str | None = None

    @property
    def commit(self) -> str:
        listing = "".join(f"{f.path}:{f.etag}" for f in sorted(self.files.values(), key=lambda f: f.path))
        return hashlib.sha1(listing.encode()).hexdigest()

    def info(self, blobs: bool) -> dict[str, Any]:
        siblings = [self._sibling(f, blobs) for f in sorted(self.files.values(), key=lambda f: f.path)]
        return {"_id": self.commit[:24], "id": self.repo_id, "modelId": self.repo_id, "sha": self.commit,
                "lastModified": self.last_modified, "private": False, "gated": "manual" if self.gated else False,
                "disabled": False, "downloads": self.downloads, "likes": self.likes, "tags": self.tags,
                "pipeline_tag": self.pipeline_tag, "library_name": self.library_name, "siblings": siblings}

    @staticmethod
    def _sibling(file: StandInFile, blobs: bool) -> dict[str, Any]:
        entry: dict[str, Any] = {"rfilename": file.path}
        if blobs:
            entry.update(size=file.size, blobId=file.git_oid)
            if file.lfs:
                entry["lfs"] = {"sha256": file.sha256, "size": file.size, "pointerSize": file.pointer_size}
        return entry

    def tree_entry(self, file: StandInFile) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "file", "oid": file.git_oid, "size": file.size, "path": file.path}
        if file.lfs:
            entry["lfs"] = {"oid": file.sha256, "size": file.size, "pointerSize": file.pointer_size}
        return entry


@dataclass
class Faults:
    corrupt: dict[tuple[str, str], int] = field(default_factory=dict)  # (repo, path) -> byte offset flipped
    drop_after: dict[tuple[str, str], tuple[int, bool]] = field(default_factory=dict)  # -> (bytes, then go away)
    bytes_per_second: float = 0.0  # 0: as fast as it goes
    ignore_range: bool = False


class StandInHub:
    """Start with `start()` (returns the endpoint for HF_ENDPOINT); `stop()` makes it unreachable."""

    def __init__(self) -> None:
        self.repos: dict[str, StandInRepo] = {}
        self.faults = Faults()
        self.served: Counter[tuple[str, str]] = Counter()  # body bytes sent per (repo, path)
        self.requests: list[tuple[str, str]] = []
        self.transfers: list[tuple[str, str, int, int]] = []  # (repo, path, first byte, bytes sent) per GET
        self.port = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add_repo(self, repo_id: str, files: dict[str, Path | bytes | StandInFile], tags: list[str],
                 **details: Any) -> StandInRepo:
        """Serve `files` (repo path -> a local file, bytes, or an already hashed StandInFile) as `repo_id`."""
        hashed = {p: s if isinstance(s, StandInFile) else StandInFile(p, s) for p, s in files.items()}
        repo = StandInRepo(repo_id, hashed, tags, **details)
        self.repos[repo_id] = repo
        return repo

    def start(self) -> str:
        handler = type("Handler", (_Handler,), {"hub": self})
        server = ThreadingHTTPServer(("127.0.0.1", self.port), handler)
        server.daemon_threads = True
        self.port = server.server_address[1]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_S},
                                        name="stand-in-hub", daemon=True)
        self._thread.start()
        return self.endpoint

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def count(self, repo_id: str, path: str, nbytes: int) -> None:
        with self._lock:
            self.served[(repo_id, path)] += nbytes

    def bytes_served(self, repo_id: str | None = None) -> int:
        return sum(n for (repo, _), n in self.served.items() if repo_id is None or repo == repo_id)


class _Handler(BaseHTTPRequestHandler):
    hub: StandInHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # quiet: the tests read the counters instead

    # ------------------------------------------------------------ routing

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
        self._route("HEAD")

    def do_GET(self) -> None:  # noqa: N802
        self._route("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._route("POST")

    def _route(self, method: str) -> None:
        url = urlparse(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        query = parse_qs(url.query)
        self.hub.requests.append((method, self.path))
        if parts[:2] == ["api", "models"]:
            self._api(method, parts[2:], query)
        elif len(parts) >= 5 and parts[2] == "resolve":
            self._resolve(method, "/".join(parts[:2]), parts[3], "/".join(parts[4:]))
        else:
            self._error(404, "RepoNotFound", "Not found")

    def _api(self, method: str, parts: list[str], query: dict[str, list[str]]) -> None:
        if not parts:
            self._json(self._search(query))
            return
        repo = self._repo("/".join(parts[:2]))
        if repo is None:
            return
        rest = parts[2:]
        revision = rest[1] if len(rest) >= 2 and rest[0] in ("revision", "tree", "paths-info") else None
        if revision is not None and not self._revision(repo, revision):
            return
        if not rest or rest[0] == "revision":
            self._json(repo.info(blobs=query.get("blobs", [""])[0].lower() == "true"))
        elif rest[0] == "tree":
            self._json([repo.tree_entry(f) for f in sorted(repo.files.values(), key=lambda f: f.path)])
        elif rest[0] == "paths-info" and method == "POST":
            length = int(self.headers.get("Content-Length") or 0)
            wanted = parse_qs(self.rfile.read(length).decode()).get("paths", [])
            self._json([repo.tree_entry(repo.files[p]) for p in wanted if p in repo.files])
        else:
            self._error(404, "EntryNotFound", "Not found")

    def _search(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        text = query.get("search", [""])[0].lower()
        tags = set(query.get("filter", []))
        pipeline = query.get("pipeline_tag", [None])[0]
        found = [r for r in self.hub.repos.values() if text in r.repo_id.lower() and tags <= set(r.tags)
                 and (pipeline is None or r.pipeline_tag == pipeline)]
        key = {"downloads": "downloads", "likes": "likes", "lastModified": "last_modified"}.get(
            query.get("sort", ["downloads"])[0], "downloads")
        found.sort(key=lambda r: getattr(r, key), reverse=True)
        limit = int(query.get("limit", ["1000"])[0])
        fields = ["id", *query.get("expand", ["downloads", "likes", "tags", "pipeline_tag"])]
        return [{name: value for name, value in r.info(blobs=False).items() if name in fields or name == "_id"}
                for r in found[:limit]]

    # ------------------------------------------------------------ files

    def _resolve(self, method: str, repo_id: str, revision: str, path: str) -> None:
        repo = self._repo(repo_id)
        if repo is None or not self._revision(repo, revision) or not self._allowed(repo):
            return
        file = repo.files.get(path)
        if file is None:
            self._error(404, "EntryNotFound", f"{path} does not exist on {revision}")
            return
        start, end = self._range(file.size)
        if start is None:
            return
        self.send_response(206 if (start, end) != (0, file.size) else 200)
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("ETag", f'"{file.etag}"')
        if file.lfs:
            self.send_header("X-Linked-Etag", f'"{file.sha256}"')
            self.send_header("X-Linked-Size", str(file.size))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        if (start, end) != (0, file.size):
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{file.size}")
        self.end_headers()
        if method == "GET":
            self._send_body(repo.repo_id, file, start, end)

    def _range(self, size: int) -> tuple[int | None, int]:
        value = self.headers.get("Range")
        if not value or self.hub.faults.ignore_range or not value.startswith("bytes="):
            return 0, size
        first, _, last = value.removeprefix("bytes=").partition("-")
        start = int(first) if first else max(size - int(last), 0)
        end = min(int(last) + 1, size) if first and last else size
        if start >= size:
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None, 0
        return start, end

    def _send_body(self, repo_id: str, file: StandInFile, start: int, end: int) -> None:
        position = self._send_blocks(repo_id, file, start, end)
        with self.hub._lock:
            self.hub.transfers.append((repo_id, file.path, start, position - start))

    def _send_blocks(self, repo_id: str, file: StandInFile, start: int, end: int) -> int:
        """Send [start, end) with the faults asked for; returns where the sending stopped."""
        faults = self.hub.faults
        flip = faults.corrupt.get((repo_id, file.path))
        drop = faults.drop_after.get((repo_id, file.path))
        position = start
        for block in file.blocks(start, end):
            if flip is not None and position <= flip < position + len(block):
                block = block[: flip - position] + bytes([block[flip - position] ^ 0xFF]) + block[flip - position + 1:]
            if drop is not None and position + len(block) > drop[0]:
                last = block[: max(drop[0] - position, 0)]
                self._drop(repo_id, file, last, drop[1])
                return position + len(last)
            if not self._write(repo_id, file, block):
                return position
            position += len(block)
        return position

    def _write(self, repo_id: str, file: StandInFile, block: bytes) -> bool:
        if self.hub.faults.bytes_per_second:
            time.sleep(len(block) / self.hub.faults.bytes_per_second)
        try:
            self.wfile.write(block)
        except OSError:  # the client hung up (a cancelled download): stop, counting only what left
            self.close_connection = True
            return False
        self.hub.count(repo_id, file.path, len(block))
        return True

    def _drop(self, repo_id: str, file: StandInFile, last: bytes, go_away: bool) -> None:
        self.wfile.write(last)
        self.wfile.flush()
        self.hub.count(repo_id, file.path, len(last))
        self.hub.faults.drop_after.pop((repo_id, file.path), None)
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)
        if go_away:
            self.hub.stop()

    # ------------------------------------------------------------ checks and answers

    def _repo(self, repo_id: str) -> StandInRepo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
        return repo

    def _revision(self, repo: StandInRepo, revision: str) -> bool:
        if revision in ("main", repo.commit):
            return True
        self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
        return False

    def _allowed(self, repo: StandInRepo) -> bool:
        if not repo.gated:
            return True
        given = self.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if given and given == repo.token:
            return True
        status = 403 if given else 401
        self._error(status, "GatedRepo", f"Access to model {repo.repo_id} is restricted. You must have access to it "
                                         "and be authenticated to access it. Please log in.")
        return False

    def _json(self, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

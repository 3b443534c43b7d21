"""Where the Hub is, who we are to it, where files go: read from the environment at each call.

huggingface_hub reads HF_ENDPOINT, HF_HOME and HF_HUB_OFFLINE once, when it is
imported; Hearth passes the endpoint and the token explicitly on every call, so
what the user (or a test) sets is what is used.
"""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import unquote, urlparse

from engine.catalog.hf_cache import cache_dir, hf_home
from engine.hub.errors import HubOffline, HubUnreachable

DEFAULT_ENDPOINT = "https://huggingface.co"
CONNECT_TIMEOUT_S = 4.0  # "cannot be reached" is said after this, not after the OS's two minutes
READ_TIMEOUT_S = 30.0
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]*[A-Za-z0-9_]$")
_HUB_HOSTS = ("huggingface.co", "www.huggingface.co", "hf.co")


@dataclass(frozen=True)
class HubSettings:
    endpoint: str
    token: str | None
    cache: Path
    offline: bool

    @classmethod
    def from_env(cls, token: str | None = None) -> "HubSettings":
        """The environment as it is now; `token` (typed into the dialog) wins over HF_TOKEN and the token file."""
        endpoint = (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
        offline = _is_true(os.environ.get("HF_HUB_OFFLINE")) or _is_true(os.environ.get("TRANSFORMERS_OFFLINE"))
        return cls(endpoint, (token or "").strip() or _stored_token(), cache_dir(), offline)

    def with_token(self, token: str | None) -> "HubSettings":
        return replace(self, token=(token or "").strip() or self.token)

    def page_url(self, repo_id: str) -> str:
        """The model's page, where its license is accepted."""
        return f"{self.endpoint}/{repo_id}"

    def check_reachable(self) -> None:
        """Raise HubOffline / HubUnreachable at once instead of letting a request hang or retry."""
        if self.offline:
            raise HubOffline("Offline mode is on (HF_HUB_OFFLINE is set), so the Hub is not asked. "
                             "Models already downloaded still work; unset HF_HUB_OFFLINE to search and download.")
        parsed = urlparse(self.endpoint)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        try:
            socket.create_connection((parsed.hostname or "", port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as error:
            raise HubUnreachable(f"The Hugging Face Hub ({self.endpoint}) cannot be reached: {_reason(error)}. "
                                 "Check the network connection; models already downloaded still work.") from error


def _is_true(value: str | None) -> bool:
    return (value or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def _stored_token() -> str | None:
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        if os.environ.get(name, "").strip():
            return os.environ[name].strip()
    path = Path(os.environ.get("HF_TOKEN_PATH") or hf_home() / "token")  # what `hf auth login` writes
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def _reason(error: OSError) -> str:
    if isinstance(error, socket.gaierror):
        return "its name does not resolve (no network, or no DNS)"
    if isinstance(error, (socket.timeout, TimeoutError)):
        return f"no answer within {CONNECT_TIMEOUT_S:.0f} s"
    if isinstance(error, ConnectionRefusedError):
        return "the connection was refused"
    return error.strerror or str(error) or type(error).__name__


@dataclass(frozen=True)
class RepoReference:
    """What a pasted repo id or URL points at."""

    repo_id: str
    revision: str | None = None
    filename: str | None = None


def parse_repo_reference(text: str, endpoint: str = DEFAULT_ENDPOINT) -> RepoReference | None:
    """'org/name', a Hub URL (huggingface.co, hf.co or the endpoint; tree, blob, resolve), or None for a query."""
    text = text.strip()
    if not text or " " in text:
        return None
    if text.split("/")[0] in _HUB_HOSTS:
        text = f"https://{text}"
    if "://" in text:
        parsed = urlparse(text)
        if parsed.hostname not in _HUB_HOSTS and not text.startswith(endpoint.rstrip("/") + "/"):
            return None
        path = parsed.path
        if text.startswith(endpoint):  # an endpoint served under a path: /hub/org/name
            path = path.removeprefix(urlparse(endpoint).path.rstrip("/"))
        return _from_path([unquote(part) for part in path.split("/") if part])
    return RepoReference(text) if _REPO_ID.match(text) else None


def _from_path(parts: list[str]) -> RepoReference | None:
    if parts and parts[0] == "models":
        parts = parts[1:]
    if len(parts) < 2 or not _REPO_ID.match("/".join(parts[:2])):
        return None
    repo_id = "/".join(parts[:2])
    if len(parts) >= 4 and parts[2] in ("tree", "blob", "resolve"):
        return RepoReference(repo_id, parts[3], "/".join(parts[4:]) or None)
    return RepoReference(repo_id)

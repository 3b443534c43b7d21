"""API keys kept out of settings.json: the system keyring where there is one, else a private file.

Two keys: the remote server's (REMOTE_KEY, sent to it) and the local API's
(LOCAL_API_KEY, which clients of Hearth's own server must send); and the MCP
servers' secrets that mcp.json names as `${keyring:NAME}` (`mcp_secret`). `keyring`
(optional: pip install 'hearth-chat[remote]') stores them in the platform's
vault (macOS Keychain, Windows Credential Locker, the Secret Service on Linux
desktops). Without keyring, or with no usable vault behind it (a headless
Linux box), each goes to its own file in Hearth's config folder, created
readable by this user only (0600 where the OS has such modes). `storage()`
says which, for the dialog. Qt-free; read once, then cached.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.settings.location import config_dir

log = logging.getLogger(__name__)
SERVICE, ACCOUNT = "Hearth", "remote-server-api-key"
FILE_NAME = "remote_api_key"
_cache: dict[str, str] = {}  # account -> key


@dataclass(frozen=True)
class Secret:
    account: str  # its name in the keyring, under SERVICE
    file_name: str  # its file in the config folder where there is no keyring
    label: str  # for messages


REMOTE_KEY = Secret(ACCOUNT, FILE_NAME, "remote server's API key")
LOCAL_API_KEY = Secret("local-api-key", "local_api_key", "local API's key")


def mcp_secret(name: str) -> Secret:
    """A secret an MCP server's env or headers refer to as `${keyring:NAME}`."""
    return Secret(f"mcp:{name}", "mcp_secret_" + re.sub(r"[^A-Za-z0-9_.-]", "_", name), f'MCP secret "{name}"')


@dataclass(frozen=True)
class Storage:
    kind: str  # "keyring" or "file"
    description: str  # for the dialog


def _keyring() -> Any | None:
    """The keyring module when a vault that can store is behind it; None otherwise."""
    try:
        import keyring
        from keyring.backends import fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # noqa: BLE001 - a broken keyring setup means: use the file
        return None
    if isinstance(backend, fail.Keyring) or getattr(backend, "priority", 1) <= 0:
        return None
    return keyring


def key_file(secret: Secret = REMOTE_KEY) -> Path:
    return config_dir() / secret.file_name


def storage(secret: Secret = REMOTE_KEY) -> Storage:
    ring = _keyring()
    if ring is not None:
        name = type(ring.get_keyring()).__name__
        return Storage("keyring", f"Stored in the system keyring ({name}), not in the settings file.")
    return Storage("file", f"Stored in {key_file(secret)}, readable by you only (no system keyring here), "
                           f"not in the settings file.")


def load_api_key() -> str:
    """The remote server's key."""
    return load_secret(REMOTE_KEY)


def save_api_key(key: str) -> Storage:
    return save_secret(REMOTE_KEY, key)


def load_secret(secret: Secret) -> str:
    if secret.account in _cache:
        return _cache[secret.account]
    ring, key = _keyring(), ""
    if ring is not None:
        try:
            key = ring.get_password(SERVICE, secret.account) or ""
        except Exception as error:  # noqa: BLE001 - a locked vault: fall back to the file
            log.warning("could not read the %s from the keyring: %s", secret.label, error)
    if not key:
        try:
            key = key_file(secret).read_text(encoding="utf-8").strip()
        except OSError:
            key = ""
    _cache[secret.account] = key
    return key


def save_secret(secret: Secret, key: str) -> Storage:
    """Store (or, when empty, remove) the key; returns where it went."""
    key = key.strip()
    _cache[secret.account] = key
    ring = _keyring()
    if ring is not None:
        try:
            _set_in_keyring(ring, secret, key)
            _remove_file(secret)  # one place only: an old copy on disk would outlive a change
            return storage(secret)
        except Exception as error:  # noqa: BLE001 - a vault refusing: the file still works
            log.warning("could not store the %s in the keyring (%s); using a private file", secret.label, error)
    _write_private(secret, key)
    return Storage("file", f"Stored in {key_file(secret)}, readable by you only, not in the settings file.")


def _set_in_keyring(ring: Any, secret: Secret, key: str) -> None:
    if key:
        ring.set_password(SERVICE, secret.account, key)
        return
    try:
        ring.delete_password(SERVICE, secret.account)
    except Exception:  # noqa: BLE001 - nothing stored is what we want
        pass


def _write_private(secret: Secret, key: str) -> None:
    if not key:
        _remove_file(secret)
        return
    path = key_file(secret)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private from its first byte
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(key)
    os.replace(temporary, path)


def _remove_file(secret: Secret) -> None:
    try:
        key_file(secret).unlink()
    except OSError:
        pass


def forget_cache() -> None:
    """Tests (and a changed config folder) read the key afresh."""
    _cache.clear()

"""Secrets in mcp.json kept out of the file: `"${keyring:NAME}"` in a server's env, headers or args.

A reference is replaced by the secret's value only when the server starts (on the tools thread,
through a lookup the window gives: the system keyring or a private file), so the file, the command
line shown to the person and every message about the server show the reference, never the value.
`plain_secrets` finds values that look like secrets (a key naming a token, key, secret, password or
auth) and `move_secrets` takes them out of the file's text, for the Tools dialog to store them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace

from engine.tools.config import ServerConfig

REFERENCE = re.compile(r"\$\{keyring:([^}]*)\}")
SECRET_KEY = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|AUTH|CREDENTIAL", re.IGNORECASE)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")

Lookup = Callable[[str], str]  # a secret's name -> its value; "" when none is stored


class MissingSecret(Exception):
    """A reference whose secret is not stored; `str(error)` is for a person."""


def reference(name: str) -> str:
    return "${keyring:" + name + "}"


def secret_name(server: str, key: str) -> str:
    """The name a moved value is stored under: "server.KEY", kept to characters safe in a file name."""
    return _UNSAFE.sub("_", f"{server}.{key}").strip("_") or "secret"


def references(server: ServerConfig) -> tuple[str, ...]:
    """The secret names the server's env, headers and args refer to."""
    values = [value for _, value in server.env + server.headers] + list(server.args)
    return tuple(dict.fromkeys(name for value in values for name in REFERENCE.findall(value)))


def resolve(server: ServerConfig, lookup: Lookup) -> ServerConfig:
    """The server with every reference replaced by its secret; MissingSecret names the ones not stored."""
    names = references(server)
    if not names:
        return server
    values = {name: lookup(name) if name.strip() else "" for name in names}
    missing = [name for name, value in values.items() if not value]
    if missing:
        listed = ", ".join(f'"{name}"' for name in missing)
        raise MissingSecret(f"needs the secret {listed} from the keyring, which is not stored. Write the value "
                            "in mcp.json in place of the reference and use \"Keep secrets in the keyring\" in "
                            "Settings, Tools")

    def fill(value: str) -> str:
        return REFERENCE.sub(lambda match: values[match.group(1)], value)

    return replace(server, args=tuple(fill(arg) for arg in server.args),
                   env=tuple((key, fill(value)) for key, value in server.env),
                   headers=tuple((key, fill(value)) for key, value in server.headers))


def _looks_secret(key: str, value: str) -> bool:
    return bool(value.strip()) and not REFERENCE.search(value) and bool(SECRET_KEY.search(key))


def plain_secrets(servers: tuple[ServerConfig, ...]) -> list[tuple[str, str]]:
    """(server, key) of every env or header value that looks like a secret and is written in plain text."""
    return [(server.name, key) for server in servers for key, value in server.env + server.headers
            if _looks_secret(key, value)]


def move_secrets(text: str) -> tuple[str, dict[str, str]]:
    """mcp.json's text with its plain secrets replaced by references, and {name: value} to store.

    Only those values change: every other field of the file (ones Hearth does not read too) stays."""
    data = json.loads(text)  # a JSONDecodeError for a file broken since it was read
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    moved: dict[str, str] = {}
    for server, entry in (servers.items() if isinstance(servers, dict) else ()):
        for field in ("env", "headers"):
            values = entry.get(field) if isinstance(entry, dict) else None
            if not isinstance(values, dict):
                continue
            for key, value in values.items():
                if isinstance(value, str) and _looks_secret(key, value):
                    name = secret_name(server, key)
                    moved[name] = value
                    values[key] = reference(name)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n", moved

"""The MCP servers a person set up, read from an `mcp.json` in the common format.

`{"mcpServers": {"NAME": {"command", "args", "env"} | {"url", "headers"}}}` is what Claude
Desktop, Cursor, LM Studio and others write, so a file of theirs can be imported as it is.
A broken file raises McpConfigError with a message for a person (which file, which server,
which field); a server entry we cannot use is an error too, never silently skipped.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FILE_NAME = "mcp.json"


class McpConfigError(ValueError):
    """An mcp.json that cannot be used; `str(error)` says what to fix."""


@dataclass(frozen=True)
class ServerConfig:
    """One MCP server: a command started as a child process (stdio) or a URL (Streamable HTTP)."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def command_line(self) -> str:
        """What will run on this computer, with the user's rights (or the address it talks to)."""
        return self.url if self.url else shlex.join([self.command, *self.args])


def read_config(path: Path) -> tuple[ServerConfig, ...]:
    """The servers of an mcp.json; no file: none."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ()
    except (OSError, UnicodeDecodeError) as error:
        raise McpConfigError(f"{path} could not be read: {error}") from error
    return parse_config(text, str(path))


def parse_config(text: str, where: str = FILE_NAME) -> tuple[ServerConfig, ...]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise McpConfigError(f"{where} is not valid JSON: {error.msg} (line {error.lineno}, column {error.colno}).") from error
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise McpConfigError(f'{where} has no "mcpServers" object: it should look like '
                             '{"mcpServers": {"name": {"command": "...", "args": [...]}}}.')
    return tuple(_server(name, entry, where) for name, entry in servers.items())


def _server(name: str, entry: Any, where: str) -> ServerConfig:
    here = f'{where}, server "{name}"'
    if not isinstance(entry, dict):
        raise McpConfigError(f"{here} should be an object with \"command\" or \"url\".")
    command, url = entry.get("command"), entry.get("url")
    if isinstance(url, str) and url.strip():
        if not url.startswith(("http://", "https://")):
            raise McpConfigError(f'{here}: "url" should start with http:// or https://, not {url!r}.')
        return ServerConfig(name, url=url.strip(), headers=_pairs(entry.get("headers"), "headers", here))
    if not isinstance(command, str) or not command.strip():
        raise McpConfigError(f'{here} needs a "command" (a program to start) or a "url" (a Streamable HTTP server).')
    args = entry.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise McpConfigError(f'{here}: "args" should be a list of text.')
    return ServerConfig(name, command=command.strip(), args=tuple(args), env=_pairs(entry.get("env"), "env", here))


def _pairs(value: Any, field: str, here: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise McpConfigError(f'{here}: "{field}" should be an object of text values.')
    return tuple(sorted(value.items()))


def config_text(servers: tuple[ServerConfig, ...]) -> str:
    """The servers written back in the common format (Import adds to the file this way)."""
    entries: dict[str, Any] = {}
    for server in servers:
        if server.url:
            entries[server.name] = {"url": server.url, **({"headers": dict(server.headers)} if server.headers else {})}
        else:
            entries[server.name] = {"command": server.command, "args": list(server.args),
                                    **({"env": dict(server.env)} if server.env else {})}
    return json.dumps({"mcpServers": entries}, indent=2, ensure_ascii=False) + "\n"


def read_text(path: Path) -> str:
    """The file's text, checked to be a usable mcp.json; no file: ""."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as error:
        raise McpConfigError(f"{path} could not be read: {error}") from error
    parse_config(text, str(path))
    return text


def merge_text(current: str, imported: str) -> str:
    """Hearth's mcp.json (text; "" for none) with the imported file's servers added, as text.

    A server of the same name is replaced (the file imported is the newer word) and goes last, like the
    new ones; everything else of Hearth's file stays as written, fields Hearth does not read too, and
    nothing but the servers comes from the other app's file. Both must have passed `parse_config`."""
    ours = json.loads(current) if current.strip() else {"mcpServers": {}}
    theirs = json.loads(imported)["mcpServers"]
    kept = {name: entry for name, entry in ours["mcpServers"].items() if name not in theirs}
    ours["mcpServers"] = {**kept, **theirs}
    return json.dumps(ours, indent=2, ensure_ascii=False) + "\n"

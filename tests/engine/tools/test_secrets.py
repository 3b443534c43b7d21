"""Secrets in mcp.json as `${keyring:NAME}` references: found, moved out of the file, filled in only at start."""

from __future__ import annotations

import json

import pytest

from engine.tools.config import ServerConfig, config_text, parse_config
from engine.tools.secrets import (
    MissingSecret,
    move_secrets,
    plain_secrets,
    references,
    resolve,
)

GITHUB = ServerConfig("github", command="npx", args=("-y", "server-github", "--token", "${keyring:gh.arg}"),
                      env=(("DEBUG", "1"), ("GITHUB_PERSONAL_ACCESS_TOKEN", "ghp_abc123")))
REMOTE = ServerConfig("remote", url="https://tools.example.com/mcp",
                      headers=(("Authorization", "Bearer s3cret"), ("X-Client", "hearth")))


def test_secret_looking_values_are_found_and_the_others_left() -> None:
    assert plain_secrets((GITHUB, REMOTE)) == [("github", "GITHUB_PERSONAL_ACCESS_TOKEN"), ("remote", "Authorization")]


def test_moved_secrets_leave_references_in_the_file_and_never_their_values() -> None:
    text, moved = move_secrets(config_text((GITHUB, REMOTE)))
    assert moved == {"github.GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_abc123", "remote.Authorization": "Bearer s3cret"}
    assert "ghp_abc123" not in text and "s3cret" not in text
    github, remote = parse_config(text)
    assert dict(github.env) == {"DEBUG": "1", "GITHUB_PERSONAL_ACCESS_TOKEN": "${keyring:github.GITHUB_PERSONAL_ACCESS_TOKEN}"}
    assert dict(remote.headers)["Authorization"] == "${keyring:remote.Authorization}"
    assert plain_secrets((github, remote)) == [] and move_secrets(text) == (text, {})  # a second move finds nothing


def test_moving_secrets_keeps_the_fields_hearth_does_not_read() -> None:
    theirs = {"mcpServers": {"gh": {"type": "stdio", "command": "gh-mcp", "env": {"GH_TOKEN": "t0k"}, "disabled": False}},
              "globalShortcut": "Ctrl+Space"}
    text, moved = move_secrets(json.dumps(theirs))
    theirs["mcpServers"]["gh"]["env"] = {"GH_TOKEN": "${keyring:gh.GH_TOKEN}"}  # type: ignore[index]
    assert (json.loads(text), moved) == (theirs, {"gh.GH_TOKEN": "t0k"})


def test_resolve_fills_env_headers_and_args_and_the_command_line_keeps_the_reference() -> None:
    store = {"github.GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_abc123", "gh.arg": "argsecret", "remote.Authorization": "Bearer s3"}
    github, remote = parse_config(move_secrets(config_text((GITHUB, REMOTE)))[0])
    assert references(github) == ("github.GITHUB_PERSONAL_ACCESS_TOKEN", "gh.arg")
    started = resolve(github, store.__getitem__)
    assert dict(started.env)["GITHUB_PERSONAL_ACCESS_TOKEN"] == "ghp_abc123" and started.args[-1] == "argsecret"
    assert dict(resolve(remote, store.__getitem__).headers) == {"Authorization": "Bearer s3", "X-Client": "hearth"}
    assert "argsecret" not in github.command_line() and "${keyring:gh.arg}" in github.command_line()


def test_a_reference_inside_a_value_is_filled_in_place() -> None:
    server = ServerConfig("r", url="http://x/mcp", headers=(("Authorization", "Bearer ${keyring:r.token}"),))
    assert resolve(server, lambda name: "abc").headers == (("Authorization", "Bearer abc"),)


def test_a_secret_not_stored_names_itself() -> None:
    server = ServerConfig("r", command="tool", env=(("A_TOKEN", "${keyring:kept}"), ("B_KEY", "${keyring:lost}")))
    with pytest.raises(MissingSecret, match='needs the secret "lost" from the keyring, which is not stored'):
        resolve(server, {"kept": "1"}.get)  # type: ignore[arg-type]

"""mcp.json in the common format: what it describes, and a broken file's message naming what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.tools.config import (
    McpConfigError,
    ServerConfig,
    config_text,
    merge_text,
    parse_config,
    read_config,
)

CLAUDE_DESKTOP = """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
      "env": {"DEBUG": "1"}
    },
    "remote": {"url": "https://tools.example.com/mcp", "headers": {"Authorization": "Bearer s3cret"}}
  }
}"""


def test_claude_desktop_file_reads_as_stdio_and_http_servers() -> None:
    files, remote = parse_config(CLAUDE_DESKTOP)
    assert files == ServerConfig("filesystem", command="npx",
                                 args=("-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"),
                                 env=(("DEBUG", "1"),))
    assert files.transport == "stdio"
    assert files.command_line() == "npx -y @modelcontextprotocol/server-filesystem /Users/me/Desktop"
    assert remote.transport == "http" and remote.url == "https://tools.example.com/mcp"
    assert remote.headers == (("Authorization", "Bearer s3cret"),)


def test_written_back_it_reads_the_same() -> None:
    servers = parse_config(CLAUDE_DESKTOP)
    assert parse_config(config_text(servers)) == servers


def test_import_adds_servers_and_replaces_one_of_the_same_name() -> None:
    current = config_text((ServerConfig("a", command="old"), ServerConfig("b", command="b")))
    merged = parse_config(merge_text(current, config_text((ServerConfig("a", command="new"), ServerConfig("c", url="http://x/mcp")))))
    assert [(s.name, s.command or s.url) for s in merged] == [("b", "b"), ("a", "new"), ("c", "http://x/mcp")]
    assert parse_config(merge_text("", current)) == parse_config(current)  # no file of ours yet


def test_import_keeps_the_fields_hearth_does_not_read_and_takes_only_their_servers() -> None:
    a: dict[str, object] = {"command": "a", "cwd": "/work", "disabled": True}
    b: dict[str, object] = {"type": "stdio", "command": "b"}
    ours, theirs = {"mcpServers": {"a": a}, "note": "mine"}, {"mcpServers": {"b": b}, "globalShortcut": "Ctrl+Space"}
    merged = json.loads(merge_text(json.dumps(ours), json.dumps(theirs)))
    assert merged == {"mcpServers": {"a": a, "b": b}, "note": "mine"}


def test_no_file_is_no_servers(tmp_path: Path) -> None:
    assert read_config(tmp_path / "mcp.json") == ()


@pytest.mark.parametrize(("text", "says"), [
    ('{"mcpServers": {"x": {"command": "a",}}}', "not valid JSON"),
    ('{"servers": {}}', '"mcpServers"'),
    ('{"mcpServers": {"x": {"args": ["a"]}}}', 'server "x" needs a "command"'),
    ('{"mcpServers": {"x": {"command": "a", "args": "b c"}}}', '"args" should be a list'),
    ('{"mcpServers": {"x": {"command": "a", "env": {"N": 1}}}}', '"env" should be an object of text'),
    ('{"mcpServers": {"x": {"url": "ftp://host"}}}', "http:// or https://"),
])
def test_broken_file_says_what_to_fix(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(text)
    with pytest.raises(McpConfigError) as caught:
        read_config(path)
    assert says in str(caught.value) and str(path) in str(caught.value)

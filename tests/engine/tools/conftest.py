"""The test MCP servers: the stdio one started by a ToolManager, the Streamable HTTP one on 127.0.0.1."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.tools.builtin.base import mcp_source, untrusted
from engine.tools.config import ServerConfig

SERVER_SCRIPT = Path(__file__).with_name("mcp_server.py")


def mcp_framed(text: str, tool: str = "add", server: str = "test") -> str:
    """A tool message's content as the window stores and sends a server's result: framed as untrusted data."""
    return untrusted(mcp_source(server, tool), text)


def stdio_server(folder: Path, name: str = "test") -> ServerConfig:
    return ServerConfig(name, command=sys.executable, args=(str(SERVER_SCRIPT), str(folder)))


@pytest.fixture(scope="module")
def tool_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tool_files")
    (folder / "notes.txt").write_text("the kettle is on\n")
    return folder


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def http_server(tool_folder: Path) -> Iterator[str]:
    """The same tools over Streamable HTTP; its URL once it accepts connections."""
    port = _free_port()
    process = subprocess.Popen([sys.executable, str(SERVER_SCRIPT), str(tool_folder), "--http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60  # a readiness poll, not a timing assertion
        while time.monotonic() < deadline and process.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("the HTTP test server did not start")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)

"""An MCP server for the tests, written with the SDK: `python mcp_server.py FOLDER [--http PORT]`.

Tools: add two numbers (any, or two from 0 to 99), read a file from FOLDER, sleep, raise, return
1 MB of text, exit the process (a server that crashes mid-call), and say an environment variable (what the server was given).
With HEARTH_TEST_CALL_LOG set (in the server's env), each `add` that runs appends a line there: a
test can see that a call never ran even after the app that started the server was killed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

FOLDER = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
server = MCPServer("test-tools")


@server.tool(description="Add two numbers.")
def add(a: float, b: float) -> str:
    log = os.environ.get("HEARTH_TEST_CALL_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as calls:
            calls.write(f"add {a} {b}\n")
    return str(a + b)


@server.tool(description="Add two whole numbers from 0 to 99.")
def add_small(a: Annotated[int, Field(ge=0, le=99)], b: Annotated[int, Field(ge=0, le=99)]) -> str:
    """Bounded arguments: under its grammar even a random-weight model ends each number (tests/families)."""
    return str(a + b)


@server.tool(description="Read a text file from the server's folder.")
def read_file(name: str) -> str:
    return (FOLDER / Path(name).name).read_text()


@server.tool(description="Sleep for some seconds, then say so.")
def sleep(seconds: float) -> str:
    time.sleep(seconds)
    return f"slept {seconds}"


@server.tool(description="Always fails.")
def fail(reason: str = "broken") -> str:
    raise ToolError(f"it failed: {reason}")


@server.tool(description="Return one megabyte of text.")
def big() -> str:
    return "x" * (1 << 20)


@server.tool(description="The server process dies in the middle of the call.")
def crash() -> str:
    os._exit(3)


@server.tool(description="The value of an environment variable of the server.")
def env(name: str) -> str:
    return os.environ.get(name, "(not set)")


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        print("test server starting", file=sys.stderr)
        server.run()

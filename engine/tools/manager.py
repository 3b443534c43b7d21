"""The MCP servers of the window's chats, on a thread of their own.

Every SDK call runs in one asyncio loop on the "mcp tools" thread: never the GUI thread, never
the engine thread. The window asks through plain methods that return concurrent.futures.Future;
cancelling one cancels the call (Stop in a chat). A server starts the first time a chat needs
its tools, and every server is stopped at shutdown. The manager runs only what it is asked to:
approving a call is the window's part, and nothing in a result can start, approve or configure
anything here. A server's result comes back framed as untrusted data (mcp_untrusted), so the prompt
the chat template renders marks it as a web page's is marked.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from engine.protocol import ToolSpec
from engine.tools.builtin.base import mcp_source, untrusted
from engine.tools.config import ServerConfig
from engine.tools.connection import Connection, ToolServerError
from engine.tools.results import (
    DEFAULT_RESULT_LIMIT,
    DEFAULT_TIMEOUT_S,
    ToolResult,
    error_result,
    from_mcp,
)
from engine.tools.secrets import Lookup

T = TypeVar("T")

__all__ = ["ServerTools", "ToolManager", "ToolServerError", "mcp_untrusted"]


def mcp_untrusted(server: str, tool: str, result: ToolResult) -> ToolResult:
    """What the server answered, framed as untrusted data naming the server and tool, as web results are: the
    model reads it as data, whatever the server (or a page it fetched) wrote. The frame adds ~150 characters
    to the cut result. The manager's own failures (a timeout, bad arguments) are its words and stay plain."""
    return replace(result, text=untrusted(mcp_source(server, tool), result.text))


@dataclass(frozen=True)
class ServerTools:
    """What one server offers, or why it offers nothing (`error`)."""

    server: str
    tools: tuple[ToolSpec, ...] = ()
    error: str = ""


def _finite(text: str) -> float:
    """A JSON number as a float, refused where no float holds it: sent on, 1e999 would reach the tool
    as null (what JSON serializers write for infinity), not as the number the model wrote."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"The arguments hold the number {text[:40]}, too large for a tool to receive")
    return value


def _not_a_number(text: str) -> float:
    raise ValueError(f"The arguments hold {text}, which is not JSON")


class ToolManager:
    """Starts, lists, calls and stops MCP servers; thread-safe, never blocks its caller."""

    def __init__(self, servers: Sequence[ServerConfig] = (), secrets: Lookup | None = None) -> None:
        """`secrets` gives the values of mcp.json's `${keyring:NAME}` references (in a worker thread: a keyring may block)."""
        self._configs = {server.name: server for server in servers}
        self._secrets = secrets
        self._connections: dict[str, Connection] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp tools", daemon=True)
        self._thread.start()
        self._closed = False

    @property
    def servers(self) -> tuple[ServerConfig, ...]:
        return tuple(self._configs.values())

    def set_servers(self, servers: Sequence[ServerConfig]) -> None:
        """A new mcp.json: servers gone or changed are stopped (changed ones start again when needed)."""
        configs = {server.name: server for server in servers}
        self._submit(self._replace(configs))

    def running(self) -> tuple[str, ...]:
        return tuple(name for name, connection in list(self._connections.items()) if connection.alive)

    def list_tools(self, server: str) -> Future[ServerTools]:
        """The server's tools, starting it if it is not running; a failure comes back as `error`."""
        self._check_open()
        return self._submit(self._list(server))

    def call(self, server: str, tool: str, arguments: str, timeout_s: float = DEFAULT_TIMEOUT_S,
             limit: int = DEFAULT_RESULT_LIMIT) -> Future[ToolResult]:
        """Run one tool with the JSON text `arguments`; every failure comes back as an error result."""
        self._check_open()
        return self._submit(self._call(server, tool, arguments, timeout_s, limit))

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop every server and the thread; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._submit(self._stop_all()).result(timeout)
        except Exception:  # a server that will not stop must not keep the app from quitting
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the tool manager was shut down")

    # ------------------------------------------------------------ on the tools thread

    def _submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    async def _connection(self, server: str) -> Connection:
        config = self._configs.get(server)
        if config is None:
            raise ToolServerError(f'There is no tool server "{server}" in mcp.json any more.')
        connection = self._connections.get(server)
        if connection is None or not connection.alive:
            if connection is not None:
                await connection.stop()
            connection = self._connections[server] = Connection(config, self._secrets)
        await connection.ready()
        return connection

    async def _list(self, server: str) -> ServerTools:
        try:
            return ServerTools(server, (await self._connection(server)).tools)
        except ToolServerError as error:
            return ServerTools(server, error=str(error))

    async def _call(self, server: str, tool: str, arguments: str, timeout_s: float, limit: int) -> ToolResult:
        try:
            values = json.loads(arguments or "{}", parse_float=_finite, parse_constant=_not_a_number)
        except json.JSONDecodeError as error:
            return error_result(f"The arguments were not valid JSON ({error.msg}); the tool was not run.")
        except ValueError as error:
            return error_result(f"{error}; the tool was not run.")
        if not isinstance(values, dict):
            return error_result("The arguments should be a JSON object; the tool was not run.")
        try:
            connection = await self._connection(server)
        except ToolServerError as error:
            return error_result(str(error))
        try:
            result = await asyncio.wait_for(connection.client.call_tool(tool, values), timeout_s)
        except asyncio.TimeoutError:
            return error_result(f"The tool {tool} did not answer within {timeout_s:g} s and was cut off.")
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the server crashed or the connection dropped mid-call
            return error_result(connection.broke(f"failed during the call of {tool}: {error or type(error).__name__}"))
        return mcp_untrusted(server, tool, from_mcp(result, limit))

    async def _replace(self, configs: dict[str, ServerConfig]) -> None:
        for name, connection in list(self._connections.items()):
            if configs.get(name) != connection.config:
                del self._connections[name]
                await connection.stop()
        self._configs = configs

    async def _stop_all(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        await asyncio.gather(*(connection.stop() for connection in connections), return_exceptions=True)

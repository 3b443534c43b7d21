"""One MCP server's connection, held open by one asyncio task on the tools thread.

The SDK's client is an async context manager built on anyio task groups, which must be entered
and left in the same task: so each server gets a task that enters it, lists the tools, and waits
until it is told to stop; calls are made from their own tasks through the open client. A stdio
server's stderr goes to a private temporary file, whose tail explains a server that fails.
Secrets referred to in mcp.json (`${keyring:NAME}`) are looked up only here, as the server starts,
and only the started child or request sees their values (engine/tools/secrets.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from contextlib import AsyncExitStack
from typing import IO, Any, cast

from engine.protocol import ToolSpec
from engine.tools.config import ServerConfig
from engine.tools.secrets import Lookup, MissingSecret, references, resolve

STDERR_TAIL_CHARS = 1500
CONNECT_TIMEOUT_S = 30.0  # starting a server (npx may download first) and listing its tools


class ToolServerError(Exception):
    """A server that did not start or broke off; `str(error)` is for a person."""


class Connection:
    """A started server: `tools` once ready; `failure` once it has broken off."""

    def __init__(self, config: ServerConfig, secrets: Lookup | None = None) -> None:
        self.config = config  # as mcp.json writes it: what every message shows
        self._secrets = secrets or _no_secrets
        self.client: Any = None
        self.tools: tuple[ToolSpec, ...] = ()
        self.failure = ""
        self._stderr: IO[bytes] | None = None
        self._ready: asyncio.Future[tuple[ToolSpec, ...]] = asyncio.get_running_loop().create_future()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self._run(), name=f"mcp server {config.name}")

    @property
    def alive(self) -> bool:
        return not self._task.done() and not self.failure

    async def ready(self) -> tuple[ToolSpec, ...]:
        try:
            return await asyncio.wait_for(asyncio.shield(self._ready), CONNECT_TIMEOUT_S)
        except asyncio.TimeoutError:
            await self.stop()
            raise ToolServerError(self.explain(f"did not answer within {CONNECT_TIMEOUT_S:.0f} s of starting")) from None

    async def stop(self) -> None:
        self._stop.set()
        try:
            await asyncio.wait_for(self._task, 10.0)
        except (asyncio.TimeoutError, asyncio.CancelledError, Exception):
            self._task.cancel()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def broke(self, why: str) -> str:
        """Mark the connection broken (a crash mid-call); the next call starts the server again."""
        self.failure = self.explain(why)
        self._stop.set()
        return self.failure

    def explain(self, why: str) -> str:
        tail = self.stderr_tail()
        where = f'The tool server "{self.config.name}" ({self.config.command_line()})'
        return f"{where} {why}." + (f"\nIts last output:\n{tail}" if tail else "")

    def stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        fd = self._stderr.fileno()
        size = os.fstat(fd).st_size
        data = os.pread(fd, STDERR_TAIL_CHARS * 4, max(0, size - STDERR_TAIL_CHARS * 4))
        return data.decode("utf-8", "replace")[-STDERR_TAIL_CHARS:].strip()

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                config = self.config
                if references(config):  # a keyring may block (a vault to unlock): not on the loop
                    config = await asyncio.to_thread(resolve, config, self._secrets)
                self.client = await stack.enter_async_context(self._client(config, stack))
                listed = await self.client.list_tools()
                self.tools = tuple(_spec(tool) for tool in listed.tools)
                self._ready.set_result(self.tools)
                await self._stop.wait()
        except asyncio.CancelledError:
            raise
        except MissingSecret as error:
            self._fail(self.explain(str(error)))
        except BaseException as error:  # an ExceptionGroup from the SDK's task groups, an OSError from the spawn
            self._fail(self.explain(f"could not start or broke off: {_describe(error)}"))
        finally:
            self.client = None

    def _fail(self, message: str) -> None:
        self.failure = self.failure or message
        if not self._ready.done():
            self._ready.set_exception(ToolServerError(message))

    def _client(self, config: ServerConfig, stack: AsyncExitStack) -> Any:
        from mcp import (
            Client,  # the SDK is imported on the tools thread, and only when a server is used
        )

        if config.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            stack.push_async_callback(http.aclose)
            return Client(streamable_http_client(config.url, http_client=http))
        from mcp.client.stdio import StdioServerParameters, stdio_client

        self._stderr = tempfile.TemporaryFile("a+b")  # O_APPEND: the child's writes never overwrite
        params = StdioServerParameters(command=config.command, args=list(config.args), env=dict(config.env))
        return Client(stdio_client(params, errlog=cast(Any, self._stderr)))


def _no_secrets(_name: str) -> str:
    return ""


def _spec(tool: Any) -> ToolSpec:
    return ToolSpec(tool.name, tool.description or "", json.dumps(tool.input_schema, ensure_ascii=False))


def _describe(error: BaseException) -> str:
    """The innermost message of what may be an exception group."""
    while getattr(error, "exceptions", None):  # an exception group (a builtin only from Python 3.11)
        error = error.exceptions[0]  # type: ignore[attr-defined]
    if isinstance(error, FileNotFoundError):
        return f"the program {error.filename or ''} was not found".replace("  ", " ")
    return str(error) or type(error).__name__

"""The built-in tools the window offers, run on a small pool of threads so a slow page never blocks a chat.

Like the MCP manager, the toolbox answers with concurrent.futures.Future and runs only what it is
asked to: approval is the window's part.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from engine.protocol import ToolSpec
from engine.tools.builtin.base import BuiltinTool, run_safely
from engine.tools.results import DEFAULT_RESULT_LIMIT, ToolResult, cut, error_result

WORKERS = 4


class Toolbox:
    def __init__(self, tools: Sequence[BuiltinTool] = ()) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="builtin tools")

    @property
    def tools(self) -> tuple[BuiltinTool, ...]:
        return tuple(self._tools.values())

    def set_tools(self, tools: Sequence[BuiltinTool]) -> None:
        """New settings (a SearXNG address, private addresses allowed): calls from now on use these."""
        self._tools = {tool.name: tool for tool in tools}

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec for tool in self._tools.values())

    def call(self, name: str, arguments: str, limit: int = DEFAULT_RESULT_LIMIT) -> Future[ToolResult]:
        tool = self._tools.get(name)
        if tool is None:
            done: Future[ToolResult] = Future()
            done.set_result(error_result(f"There is no built-in tool named {name}; it did not run."))
            return done
        return self._pool.submit(lambda: cut(run_safely(tool, arguments), limit))

    def shutdown(self) -> None:
        """Calls under way are not waited for (a page may take its whole time limit); none starts after."""
        self._pool.shutdown(wait=False, cancel_futures=True)

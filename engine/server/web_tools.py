"""The built-in web tools the server may run itself (`hearth-serve --tools web`): which ones, and their limits.

Off unless the server was started with them. A request asks for one as the Responses API asks for
OpenAI's own search: a tool entry whose type is the tool's name, `{"type": "web_search"}` or
`{"type": "fetch_page"}` (the Responses API's `web_search_preview` is taken as `web_search`), beside
or instead of its own `{"type": "function", ...}` tools. The server then runs those calls itself, with
the same address guard, size and time limits as the window's tools, and the model goes on with the
results; calls to the client's own functions still come back to the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.protocol import ToolCall, ToolSpec
from engine.tools.builtin.base import BuiltinTool
from engine.tools.builtin.fetch_page import NAME as FETCH_PAGE
from engine.tools.builtin.fetch_page import PageFetcher
from engine.tools.builtin.guard import AddressGuard
from engine.tools.builtin.web_search import NAME as WEB_SEARCH
from engine.tools.builtin.web_search import (
    DdgsBackend,
    SearchBackend,
    SearxngBackend,
    WebSearch,
)
from engine.tools.results import DEFAULT_RESULT_LIMIT, ToolResult

WEB_TOOL_NAMES = (WEB_SEARCH, FETCH_PAGE)
FRAME_ROOM = 1000  # characters of a result the untrusted frame, title, URL and notes take (as the window)
PAGE_TEXT_LIMIT = DEFAULT_RESULT_LIMIT - FRAME_ROOM  # cut inside the frame: the model still sees where a page ends
TYPE_ALIASES = {"web_search_preview": WEB_SEARCH}  # the Responses API's older name for its search


@dataclass(frozen=True)
class ServerToolRan:
    """One call the server ran for the model, with what it gave back (the API shows it as a step)."""

    chat_id: str
    round_number: int  # 1: the model's first answer
    call: ToolCall
    result: ToolResult

    def as_json(self) -> dict[str, Any]:
        """The step in the chat completion: the call as OpenAI spells one, and what it gave."""
        return {"id": self.call.id, "type": "function",
                "function": {"name": self.call.name, "arguments": self.call.arguments},
                "round": self.round_number, "output": self.result.text, "is_error": self.result.is_error,
                "sources": list(self.result.sources)}


@dataclass(frozen=True)
class ServerTools:
    """The tools a request may ask the server to run, and the limits of one request's tool rounds.

    `rounds`: model answers that may end in server-run calls; the answer after the last is written with no
    tools offered. `pages`: fetch_page calls run per request (later ones get an error result). `time_s`: once
    a request's rounds have taken this long, the model is asked for its answer."""

    tools: tuple[BuiltinTool, ...] = ()
    rounds: int = 4
    pages: int = 5
    time_s: float = 120.0

    def names(self) -> tuple[str, ...]:
        return tuple(tool.name for tool in self.tools)

    def spec(self, kind: str) -> ToolSpec | None:
        """The spec of the tool a request's `{"type": kind}` entry asks for; None if the server has no such tool."""
        name = TYPE_ALIASES.get(kind, kind)
        return next((tool.spec for tool in self.tools if tool.name == name), None)


@dataclass(frozen=True)
class WebToolSettings:
    """What `hearth-serve` was told about the web tools."""

    searxng_url: str = ""  # empty: ddgs
    allowed_hosts: tuple[str, ...] = ()  # private hosts fetch_page may reach all the same (a local wiki)
    backend: SearchBackend | None = None  # tests: the stand-in search
    guard: AddressGuard | None = None  # tests: the stand-in web's resolver
    limits: ServerTools = field(default_factory=ServerTools)


def web_tools(settings: WebToolSettings) -> ServerTools:
    """web_search and fetch_page as the server runs them."""
    backend = settings.backend or (SearxngBackend(settings.searxng_url) if settings.searxng_url else DdgsBackend())
    guard = settings.guard or AddressGuard(allowed_hosts=settings.allowed_hosts)
    tools: Sequence[BuiltinTool] = (WebSearch(backend).tool(), PageFetcher(guard, text_limit=PAGE_TEXT_LIMIT).tool())
    limits = settings.limits
    return ServerTools(tuple(tools), limits.rounds, limits.pages, limits.time_s)

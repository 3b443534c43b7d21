"""Hearth's built-in tools in the window: which are on (all off at first), built from the settings for each
call, and run on the engine toolbox's threads. The ToolService offers them beside the MCP servers' tools,
under the server name "built-in", so they share its approval, always-allow and result paths.
"""

from __future__ import annotations

from collections.abc import Collection
from concurrent.futures import Future
from functools import partial

from app.history.notes import HistoryTools
from app.history.records import HistoryError
from app.settings.store import Settings
from engine.tools.builtin.base import BuiltinTool
from engine.tools.builtin.fetch_page import PageFetcher
from engine.tools.builtin.guard import AddressGuard
from engine.tools.builtin.memory import Memory, notes_prompt
from engine.tools.builtin.robots import RobotsRules
from engine.tools.builtin.search_chats import SearchChats
from engine.tools.builtin.toolbox import Toolbox
from engine.tools.builtin.web_client import WebLimits
from engine.tools.builtin.web_search import DdgsBackend, SearxngBackend, WebSearch
from engine.tools.results import ToolResult

BUILTIN_SERVER = "built-in"
MEMORY = "memory"
FRAME_ROOM = 1000  # characters of a result the untrusted frame, title, URL and notes of a page may take
FETCH_TIMEOUT_S = 20.0  # a page, its robots.txt and its redirects; tools.timeout_s when that is shorter


class BuiltinTools:
    """The four tools, each on or off in `tools.builtin_enabled`; the memory notes and chat search in `history`."""

    def __init__(self, settings: Settings, history: HistoryTools | None = None) -> None:
        self.settings = settings
        self.history = history or HistoryTools()
        self.robots = RobotsRules()  # kept for the session: a site's robots.txt is read once
        self.toolbox = Toolbox()

    def all(self, chat_id: str = "") -> tuple[BuiltinTool, ...]:
        """Every built-in tool as the settings configure it now (a SearXNG address, private addresses allowed),
        for the chat `chat_id` (search_chats leaves that chat out)."""
        get = self.settings.get
        guard = AddressGuard(allow_private=get("tools.web_allow_private"),
                             allowed_hosts=tuple(get("tools.web_allowed_hosts")))
        limits = WebLimits(timeout_s=min(FETCH_TIMEOUT_S, get("tools.timeout_s")))
        backend = SearxngBackend(get("tools.searxng_url")) if get("tools.searxng_url").strip() else DdgsBackend()
        text_limit = max(FRAME_ROOM, get("tools.result_limit") - FRAME_ROOM)  # the page's end marker stays in
        return (WebSearch(backend).tool(), PageFetcher(guard, limits, self.robots, text_limit).tool(),
                SearchChats(partial(self.history.search_chats, exclude_chat=chat_id)).tool(), Memory(self.history).tool())

    def enabled(self, chat_id: str = "", also: Collection[str] = ()) -> tuple[BuiltinTool, ...]:
        """The tools the settings turned on, and `also` (research mode's, which the switch asked for)."""
        on = set(self.settings.get("tools.builtin_enabled")) | set(also)
        return tuple(tool for tool in self.all(chat_id) if tool.name in on)

    def is_enabled(self, name: str) -> bool:
        return name in self.settings.get("tools.builtin_enabled")

    def set_enabled(self, name: str, on: bool) -> None:
        names = [value for value in self.settings.get("tools.builtin_enabled") if value != name]
        self.settings.set("tools.builtin_enabled", names + [name] if on else names)
        self.settings.save()

    def call(self, name: str, arguments: str, chat_id: str = "", also: Collection[str] = ()) -> Future[ToolResult]:
        self.toolbox.set_tools(self.enabled(chat_id, also))
        return self.toolbox.call(name, arguments, self.settings.get("tools.result_limit"))

    def memory_off(self, chat_id: str) -> bool:
        """Whether the chat's switch turned memory off; a history that cannot be read: off, to be safe."""
        try:
            return self.history.memory_off(chat_id)
        except HistoryError:
            return True

    def set_memory_off(self, chat_id: str, off: bool) -> None:
        self.history.set_memory_off(chat_id, off)

    def memory_prompt(self, chat_id: str) -> str:
        """The notes a chat's prompt gets: none unless the memory tool is on and the chat did not turn memory off."""
        if not self.is_enabled(MEMORY):
            return ""
        if self.memory_off(chat_id):
            return ""
        try:
            return notes_prompt(self.history.notes())
        except HistoryError:  # the history cannot be read: the chat goes on without its notes
            return ""

    def shutdown(self) -> None:
        self.toolbox.shutdown()
        self.history.close()

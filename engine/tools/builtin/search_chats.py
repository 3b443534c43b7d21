"""The `search_chats` tool: the person's own earlier chats, searched by the app's full-text index.

The engine never opens the history database (it belongs to the app): the app hands in a search
function that returns excerpts. Each excerpt names its chat and message, so the answer can point
at them. A chat's text may hold pasted pages, so excerpts are framed as data like any page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.tools.builtin.base import BuiltinTool, spec, text_argument, untrusted
from engine.tools.results import ToolResult

NAME = "search_chats"
MAX_EXCERPTS = 8
SPEC = spec(NAME, "Search the user's own earlier chats in Hearth for words. Returns excerpts, each with its "
            "chat's title and the chat and message ids.",
            {"query": {"type": "string", "description": "Words to find (all of them must appear)"}}, ["query"])


@dataclass(frozen=True)
class ChatExcerpt:
    chat_id: str
    chat_title: str
    message_id: str
    role: str
    text: str


ChatSearch = Callable[[str, int], list[ChatExcerpt]]  # query, how many -> excerpts, best first


@dataclass
class SearchChats:
    search: ChatSearch

    def tool(self) -> BuiltinTool:
        return BuiltinTool(SPEC, self.run, "Search your chats")

    def run(self, values: dict[str, Any]) -> ToolResult:
        query = text_argument(values, "query", limit=500)
        excerpts = self.search(query, MAX_EXCERPTS)
        if not excerpts:
            return ToolResult(f"No message of the user's chats contains {query!r}.")
        lines = [f"{number}. {excerpt.chat_title or '(untitled)'} — {excerpt.role}\n"
                 f"   chat {excerpt.chat_id}, message {excerpt.message_id}\n   {excerpt.text}"
                 for number, excerpt in enumerate(excerpts, 1)]
        return ToolResult(untrusted(f"the user's saved chats (search {query!r})", "\n\n".join(lines)))

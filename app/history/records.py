"""What the chat history hands out: frozen records, errors, and the branch tree.

No Qt and no SQL here, so the window can use the same tree functions on a
snapshot it already holds (switching "< 1/2 >" needs no trip to the disk).
A message's alternatives are its siblings: the messages with the same parent.
The active branch starts at the chat's active root and follows each message's
active child; a missing or stale pointer falls back to the newest alternative.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from engine.protocol import Dictation, ImagePart, ToolCall

Role = Literal["system", "user", "assistant", "tool"]
MessageState = Literal["complete", "streaming", "interrupted"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
STATES: tuple[str, ...] = ("complete", "streaming", "interrupted")

# Around each match in SearchHit.snippet; cannot occur in typed text.
MATCH_START = "\x02"
MATCH_END = "\x03"


class HistoryError(Exception):
    """Saving or loading history failed; `str(error)` is written for a person.

    kind: "full", "readonly", "locked", "corrupt", "io", "newer", "import",
    "missing" or "other", so a caller can react without parsing the text.
    """

    def __init__(self, message: str, kind: str = "other", path: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.path = path


class HistoryImportError(HistoryError):
    """An import file was not valid JSON or not in the expected format."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message, "import", path)


@dataclass(frozen=True)
class Chat:
    id: str
    title: str
    created: float
    updated: float
    model: str = ""
    settings: dict[str, Any] = field(default_factory=dict)  # treat as read-only
    is_open: bool = False
    tab_order: int | None = None
    scroll_position: float = 0.0
    title_auto: bool = True
    active_root_id: str | None = None
    deleted: bool = False
    pinned: bool = False  # listed first in the sidebar
    folder_id: str | None = None  # the sidebar folder it is in (app/history/folders.py)


@dataclass(frozen=True)
class Folder:
    id: str
    name: str
    position: int = 0  # the sidebar lists folders by it, then by name
    collapsed: bool = False  # its chats hidden in the sidebar


@dataclass(frozen=True)
class StoredMessage:
    id: str
    chat_id: str
    parent_id: str | None
    role: Role
    text: str
    state: MessageState
    created: float
    prompt_tokens: int | None = None
    generated_tokens: int | None = None
    timings: dict[str, Any] = field(default_factory=dict)  # treat as read-only
    finish_reason: str | None = None
    active_child_id: str | None = None
    reasoning: str = ""  # a reasoning model's thinking before `text`, stored apart from it
    tool_calls: tuple[ToolCall, ...] = ()  # the calls this answer made
    tool_call_id: str = ""  # a tool message: the call it answers
    tool_name: str = ""  # ... and that tool's name
    images: tuple[ImagePart, ...] = ()  # a user message's pictures (app/history/images.py)
    dictation: Dictation | None = None  # a user message that was spoken: what the speech model heard


@dataclass(frozen=True)
class ChatSnapshot:
    """One chat with all its messages (every branch), oldest first."""

    chat: Chat
    messages: tuple[StoredMessage, ...]

    def path(self) -> list[StoredMessage]:
        """The active branch, root to leaf: what the tab shows."""
        return active_path(self.messages, self.chat.active_root_id)

    def siblings(self, message_id: str) -> list[StoredMessage]:
        target = self._by_id.get(message_id)
        return [] if target is None else list(self._children.get(target.parent_id, []))

    # Indexed once per snapshot: a long chat asks for every shown card's position after each scroll.
    @cached_property
    def _by_id(self) -> dict[str, StoredMessage]:
        return {message.id: message for message in self.messages}

    @cached_property
    def _children(self) -> dict[str | None, list[StoredMessage]]:
        return children_of(self.messages)

    def position(self, message_id: str) -> tuple[int, int]:
        """(1-based index, count) among the alternatives: "< 1/2 >"."""
        alternatives = [m.id for m in self.siblings(message_id)]
        return alternatives.index(message_id) + 1, len(alternatives)


@dataclass(frozen=True)
class SearchHit:
    chat_id: str
    chat_title: str
    chat_is_open: bool
    message_id: str
    role: Role
    snippet: str  # matches wrapped in MATCH_START / MATCH_END
    created: float

    @property
    def snippet_text(self) -> str:
        return self.snippet.replace(MATCH_START, "").replace(MATCH_END, "")

    @property
    def snippet_html(self) -> str:
        escaped = html.escape(self.snippet)
        return escaped.replace(MATCH_START, "<b>").replace(MATCH_END, "</b>")


def children_of(messages: Sequence[StoredMessage]) -> dict[str | None, list[StoredMessage]]:
    """parent id (None for roots) -> children in creation order."""
    children: dict[str | None, list[StoredMessage]] = {}
    for message in messages:
        children.setdefault(message.parent_id, []).append(message)
    return children


def active_path(messages: Sequence[StoredMessage], active_root_id: str | None) -> list[StoredMessage]:
    """Root to leaf through each level's chosen alternative (the newest when none is chosen)."""
    children = children_of(messages)
    path: list[StoredMessage] = []
    wanted, level = active_root_id, children.get(None, [])
    while level:
        chosen = next((m for m in level if m.id == wanted), level[-1])
        path.append(chosen)
        wanted, level = chosen.active_child_id, children.get(chosen.id, [])
    return path


def siblings(messages: Sequence[StoredMessage], message_id: str) -> list[StoredMessage]:
    """The alternatives of a message, itself included, oldest first ([] if unknown)."""
    target = next((m for m in messages if m.id == message_id), None)
    if target is None:
        return []
    return [m for m in messages if m.parent_id == target.parent_id]

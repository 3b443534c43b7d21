"""Which rows the chat sidebar shows, in what order: pinned chats, each folder with its chats, then the rest.

Separate from the Sidebar widget because the arrangement changes with what the list means (its
sections, which folders are unfolded, what a search keeps, a search kept to one folder), while the
widget changes with how rows look and what a click does. Plain data in, plain rows out: no Qt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from app.history.records import Chat, Folder


@dataclass(frozen=True)
class HeaderRow:
    title: str


@dataclass(frozen=True)
class FolderRow:
    folder: Folder
    count: int  # the chats in it that the list keeps
    unfolded: bool


@dataclass(frozen=True)
class ChatRow:
    chat: Chat
    folder_id: str | None  # the folder it is listed under, None in "Pinned" or "Recent"


Row = HeaderRow | FolderRow | ChatRow


def matching(chats: list[Chat], hits: Mapping[str, str], query: str, within: str | None) -> list[Chat]:
    """The chats a search keeps: those whose text matched (`hits`) or whose title has every word;
    all of them without a query. `within`: only the chats of that folder."""
    words = query.lower().split()
    kept = [chat for chat in chats if within in (None, chat.folder_id)]
    if not words:
        return kept
    return [chat for chat in kept if chat.id in hits or all(word in chat.title.lower() for word in words)]


def arrange(chats: list[Chat], folders: list[Folder], searching: bool, within: str | None) -> list[Row]:
    """Pinned chats first, then the folders (a search shows only those with matches, unfolded),
    then the rest under "Recent"; a line that says so where nothing is listed."""
    known = {folder.id for folder in folders}
    pinned = [chat for chat in chats if chat.pinned]
    filed = [chat for chat in chats if not chat.pinned and chat.folder_id in known]
    loose = [chat for chat in chats if not chat.pinned and chat.folder_id not in known]
    rows = _section("Pinned", pinned)
    for folder in [folder for folder in folders if within in (None, folder.id)]:
        inside = [chat for chat in filed if chat.folder_id == folder.id]
        if inside or not searching:
            unfolded = searching or within is not None or not folder.collapsed
            rows.append(FolderRow(folder, len(inside), unfolded))
            rows += [ChatRow(chat, folder.id) for chat in inside] if unfolded else []
    rows += _section("Recent" if pinned or folders else "", loose)
    if not chats:
        rows.append(HeaderRow("Nothing found." if searching else "No chats yet."))
    return rows


def _section(title: str, chats: list[Chat]) -> list[Row]:
    header: list[Row] = [HeaderRow(title)] if title and chats else []
    return header + [ChatRow(chat, None) for chat in chats]

"""Folders of chats, as the sidebar shows them: the store's folder calls (pure Python, no Qt).

A chat is in one folder or none (chats.folder_id); a folder has a name, a place in the list and
whether it is folded. Deleting a folder either keeps its chats (they go back to no folder) or
deletes them with it (the same soft delete as one chat's). These run on the history thread like
HistoryStore's own methods: HistoryClient queues them (`create_folder`, `move_chat`, ...).
"""

from __future__ import annotations

import time

from app.history.records import Folder
from app.history.store import HistoryStore

FOLDER_COLUMNS = "id, name, position, collapsed"
MAX_NAME = 80


def folder_name(name: str) -> str:
    """One line, no runs of spaces, not too long for the sidebar."""
    return " ".join(name.split())[:MAX_NAME]


def list_folders(store: HistoryStore) -> list[Folder]:
    rows = store._rows("list the folders", f"SELECT {FOLDER_COLUMNS} FROM folders ORDER BY position, name COLLATE NOCASE")
    return [Folder(row["id"], row["name"], row["position"], bool(row["collapsed"])) for row in rows]


def create_folder(store: HistoryStore, folder_id: str, name: str) -> None:
    """A new folder, listed last."""
    with store._write("make the folder") as db:
        position = int(db.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM folders").fetchone()[0])
        db.execute("INSERT INTO folders (id, name, position, collapsed, created) VALUES (?, ?, ?, 0, ?)",
                   (folder_id, folder_name(name) or "New folder", position, time.time()))


def rename_folder(store: HistoryStore, folder_id: str, name: str) -> None:
    if folder_name(name):
        with store._write("rename the folder") as db:
            db.execute("UPDATE folders SET name = ? WHERE id = ?", (folder_name(name), folder_id))


def set_folder_collapsed(store: HistoryStore, folder_id: str, collapsed: bool) -> None:
    with store._write("fold the folder") as db:
        db.execute("UPDATE folders SET collapsed = ? WHERE id = ?", (int(collapsed), folder_id))


def move_chat(store: HistoryStore, chat_id: str, folder_id: str | None) -> None:
    """Put a chat in a folder, or (None) in none."""
    with store._write("move the chat") as db:
        db.execute("UPDATE chats SET folder_id = ? WHERE id = ?", (folder_id, chat_id))


def delete_folder(store: HistoryStore, folder_id: str, with_chats: bool) -> list[str]:
    """Remove a folder; its chats go back to no folder, or are deleted with it. Returns the chats it held."""
    with store._write("delete the folder") as db:
        held = [row[0] for row in db.execute("SELECT id FROM chats WHERE folder_id = ? AND deleted_at IS NULL",
                                             (folder_id,))]
        if with_chats:
            db.execute("UPDATE chats SET deleted_at = ?, is_open = 0, tab_order = NULL WHERE folder_id = ? "
                       "AND deleted_at IS NULL", (time.time(), folder_id))
        db.execute("UPDATE chats SET folder_id = NULL WHERE folder_id = ?", (folder_id,))
        db.execute("DELETE FROM folders WHERE id = ?", (folder_id,))
    return held

"""The built-in tools' side of the history database: memory notes, and the chats' search for `search_chats`.

The history worker owns the main connection; the tools run on their own threads (engine/tools/builtin),
so this opens a connection of its own to the same file, opened on first use (the worker has migrated
the file by then). The database is in WAL mode: these short reads and writes never wait on the worker's
transactions for long, and SQLite's busy timeout covers the rest. Thread-safe: one lock around the
connection. Pure Python, no Qt, like the store.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from app.history.database import BUSY_TIMEOUT_S, default_database_path, human_error
from app.history.store import HistoryStore
from engine.tools.builtin.memory import Note
from engine.tools.builtin.search_chats import ChatExcerpt

T = TypeVar("T")
EXCLUDED_ROOM = 20  # hits asked for beyond the limit, so the asking chat's own messages can be left out


class HistoryTools:
    """Notes (the NoteKeeper the memory tool uses, plus what Settings, Memory edits) and the chats' search."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _use(self, action: str, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                if self._connection is None:
                    self.path = self.path or default_database_path()
                    self._connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                                       check_same_thread=False)
                    self._connection.row_factory = sqlite3.Row
                return work(self._connection)
            except sqlite3.Error as error:
                raise human_error(error, Path(self.path or ""), action) from None

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # ------------------------------------------------------------ notes

    def save(self, text: str) -> Note:
        def insert(db: sqlite3.Connection) -> Note:
            now = time.time()
            cursor = db.execute("INSERT INTO memory_notes (text, enabled, created, updated) VALUES (?, 1, ?, ?)",
                                (text.strip(), now, now))
            return Note(int(cursor.lastrowid or 0), text.strip())
        return self._use("save the note", insert)

    def notes(self) -> list[Note]:
        rows = self._use("read the notes", lambda db: db.execute(
            "SELECT id, text, enabled FROM memory_notes ORDER BY id").fetchall())
        return [Note(int(row["id"]), row["text"], bool(row["enabled"])) for row in rows]

    def forget(self, note_id: int) -> bool:
        return self._changed("delete the note", "DELETE FROM memory_notes WHERE id = ?", (note_id,))

    def update(self, note_id: int, text: str | None = None, enabled: bool | None = None) -> bool:
        """The person's edit in Settings, Memory: new text, or turned on or off."""
        if text is not None:
            return self._changed("change the note", "UPDATE memory_notes SET text = ?, updated = ? WHERE id = ?",
                                 (text.strip(), time.time(), note_id))
        if enabled is not None:
            return self._changed("change the note", "UPDATE memory_notes SET enabled = ?, updated = ? WHERE id = ?",
                                 (int(enabled), time.time(), note_id))
        return False

    def _changed(self, action: str, sql: str, params: tuple[Any, ...]) -> bool:
        return self._use(action, lambda db: db.execute(sql, params).rowcount > 0)

    def memory_off(self, chat_id: str) -> bool:
        """Whether the chat's switch turned memory off (a chat not stored yet: on)."""
        row = self._use("read the chat's memory switch", lambda db: db.execute(
            "SELECT memory_off FROM chats WHERE id = ?", (chat_id,)).fetchone())
        return bool(row and row[0])

    def set_memory_off(self, chat_id: str, off: bool) -> bool:
        return self._changed("change the chat's memory switch", "UPDATE chats SET memory_off = ? WHERE id = ?",
                             (int(off), chat_id))

    # ------------------------------------------------------------ the chats' search

    def search_chats(self, query: str, limit: int, exclude_chat: str = "") -> list[ChatExcerpt]:
        """The history's own full-text search (every chat not deleted) as excerpts for the model; `exclude_chat`:
        the chat that asks, whose own question would otherwise be the first hit."""
        def search(db: sqlite3.Connection) -> list[ChatExcerpt]:
            hits = HistoryStore(db, Path(self.path or "")).search(query, limit + EXCLUDED_ROOM)
            return [ChatExcerpt(hit.chat_id, hit.chat_title, hit.message_id, hit.role, hit.snippet_text)
                    for hit in hits if hit.chat_id != exclude_chat][:limit]
        return self._use("search the chats", search)

"""HistoryStore: the user's chats in one SQLite file (pure Python, no Qt).

One store owns one connection and is used from one thread: the history
worker's (see app/history/worker.py). Every write is one short transaction,
so a killed process loses only what had not been handed to the store yet.
Each failure is raised as a HistoryError worded for a person.

Messages form a tree per chat: editing a message or regenerating an answer adds
a sibling, and the chat remembers which branch is active (app/history/records.py).
The SQL itself is below the store: chats and tabs in app/history/rows.py, the message
operations in app/history/message_rows.py.
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from app.chat.title import DEFAULT_TITLE, title_from_user
from app.history import import_export as history_io
from app.history import message_rows
from app.history.database import default_database_path, human_error, open_database
from app.history.images import images_of_chat
from app.history.records import (
    MATCH_END, MATCH_START, ROLES, STATES, Chat, ChatSnapshot, HistoryError, SearchHit, StoredMessage,
)
from app.history.rows import (
    CHAT_COLUMNS, MESSAGE_COLUMNS, chat_from_row, fts_query, insert_chat, insert_imported, merge_chat_settings,
    message_from_row, next_tab_order, purge_chats, set_open_tabs,
)
from engine.documents.index import delete_index
from engine.protocol import Dictation, ImagePart, ToolCall

__all__ = ["HistoryError", "HistoryStore", "default_database_path", "new_id"]


def new_id() -> str:
    """A fresh chat or message id; callers may make one up front and pass it in."""
    return uuid.uuid4().hex


class HistoryStore:
    """Chats, messages, tabs and search in one database; see the module docstring."""

    def __init__(self, connection: sqlite3.Connection, path: Path, recovered_from: Path | None = None) -> None:
        self._db = connection
        self.path = path
        self.recovered_from = recovered_from  # where a damaged file was moved, once

    @classmethod
    def open(cls, path: str | Path | None = None) -> HistoryStore:
        path = Path(path) if path is not None else default_database_path()
        connection, aside = open_database(path)
        return cls(connection, path, aside)

    def close(self) -> None:
        self._db.close()

    # ------------------------------------------------------------ plumbing

    @contextmanager
    def _write(self, action: str) -> Iterator[sqlite3.Connection]:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            yield self._db
            self._db.execute("COMMIT")
        except BaseException as error:
            if self._db.in_transaction:  # SQLite may already have rolled back (disk full)
                try:
                    self._db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
            if isinstance(error, sqlite3.Error):
                raise human_error(error, self.path, action) from None
            raise

    def _rows(self, action: str, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error as error:
            raise human_error(error, self.path, action) from None

    # ------------------------------------------------------------ chats

    def create_chat(self, title: str = "", model: str = "", settings: dict[str, Any] | None = None,
                    chat_id: str | None = None, open_tab: bool = True) -> Chat:
        chat_id = chat_id or new_id()
        with self._write("create the chat") as db:
            insert_chat(db, chat_id, title_from_user(title), model, settings or {}, open_tab)
        return self.chat(chat_id)

    def chat(self, chat_id: str) -> Chat:
        rows = self._rows("read the chat", f"SELECT {CHAT_COLUMNS} FROM chats WHERE id = ?", (chat_id,))
        if not rows:
            raise HistoryError(f"The chat {chat_id} is not in the history (was it deleted?).", "missing")
        return chat_from_row(rows[0])

    def load_chat(self, chat_id: str) -> ChatSnapshot:
        chat = self.chat(chat_id)
        rows = self._rows("read the chat", f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE chat_id = ? ORDER BY seq", (chat_id,))
        try:
            images = images_of_chat(self._db, chat_id)
        except sqlite3.Error as error:
            raise human_error(error, self.path, "read the chat's pictures") from None
        messages = (message_from_row(row, images.get(row["id"], ())) for row in rows)
        return ChatSnapshot(chat, tuple(messages))

    def list_chats(self, include_deleted: bool = False) -> list[Chat]:
        """Every chat, pinned ones first, then the most recently used first."""
        where = "" if include_deleted else "WHERE deleted_at IS NULL"
        rows = self._rows("list the chats", f"SELECT {CHAT_COLUMNS} FROM chats {where} "
                          "ORDER BY pinned DESC, updated DESC, created DESC")
        return [chat_from_row(row) for row in rows]

    def open_tabs(self) -> list[Chat]:
        rows = self._rows("list the open tabs", f"SELECT {CHAT_COLUMNS} FROM chats "
                          "WHERE is_open = 1 AND deleted_at IS NULL ORDER BY tab_order, created")
        return [chat_from_row(row) for row in rows]

    def set_open_tabs(self, chat_ids: list[str], current: str | None = None) -> None:
        """The tabs now open, left to right; every other chat is closed."""
        with self._write("remember the open tabs") as db:
            set_open_tabs(db, chat_ids, current)

    def current_tab(self) -> str | None:
        rows = self._rows("read the current tab", "SELECT value FROM meta WHERE key = 'current_tab'")
        return (rows[0][0] or None) if rows else None

    def open_tab(self, chat_id: str) -> None:
        """Reopen a closed chat as the last tab."""
        with self._write("reopen the chat") as db:
            db.execute("UPDATE chats SET is_open = 1, tab_order = ? WHERE id = ? AND is_open = 0",
                       (next_tab_order(db), chat_id))

    def close_tab(self, chat_id: str) -> None:
        with self._write("close the chat") as db:
            db.execute("UPDATE chats SET is_open = 0, tab_order = NULL WHERE id = ?", (chat_id,))

    def set_scroll_position(self, chat_id: str, position: float) -> None:
        with self._write("remember the scroll position") as db:
            db.execute("UPDATE chats SET scroll_position = ? WHERE id = ?", (float(position), chat_id))

    def update_chat_settings(self, chat_id: str, changes: dict[str, Any]) -> None:
        """Merge `changes` into the chat's own settings (the Think choice, ...); other keys stay."""
        with self._write("save the chat's settings") as db:
            merge_chat_settings(db, chat_id, changes)

    def set_pinned(self, chat_id: str, pinned: bool) -> None:
        with self._write("pin the chat") as db:
            db.execute("UPDATE chats SET pinned = ? WHERE id = ?", (int(pinned), chat_id))

    def rename_chat(self, chat_id: str, title: str) -> None:
        title = title_from_user(title)
        with self._write("rename the chat") as db:
            db.execute("UPDATE chats SET title = ?, title_auto = ? WHERE id = ?",
                       (title or DEFAULT_TITLE, int(not title), chat_id))

    def delete_chat(self, chat_id: str) -> None:
        """Hide the chat; `restore_chat` undoes this until `purge_deleted` runs."""
        with self._write("delete the chat") as db:
            db.execute("UPDATE chats SET deleted_at = ?, is_open = 0, tab_order = NULL WHERE id = ?", (time.time(), chat_id))

    def restore_chat(self, chat_id: str, open_tab: bool = True) -> None:
        with self._write("restore the chat") as db:
            db.execute("UPDATE chats SET deleted_at = NULL WHERE id = ?", (chat_id,))
            if open_tab:
                db.execute("UPDATE chats SET is_open = 1, tab_order = ? WHERE id = ?", (next_tab_order(db), chat_id))

    def purge_deleted(self, older_than_s: float = 0.0) -> int:
        """Really delete chats deleted more than `older_than_s` ago; returns how many."""
        cutoff = time.time() - older_than_s
        with self._write("delete old chats") as db:
            chat_ids, purged = purge_chats(db, cutoff)
        for chat_id in chat_ids:  # the attached files' text and index go with the chat
            delete_index(self.path.parent / "documents", chat_id)
        return purged

    def drop_empty_closed_chats(self) -> int:
        """Tabs opened and closed without a word leave no entry in the chat list; returns how many."""
        with self._write("tidy the chat list") as db:
            return db.execute("DELETE FROM chats WHERE is_open = 0 AND NOT EXISTS"
                              " (SELECT 1 FROM messages WHERE messages.chat_id = chats.id)").rowcount

    # ------------------------------------------------------------ messages

    def add_message(self, chat_id: str, role: str, text: str = "", parent_id: str | None = None,
                    state: str = "complete", message_id: str | None = None, *, tool_call_id: str = "",
                    tool_name: str = "", finish_reason: str | None = None,
                    images: tuple[ImagePart, ...] = (), dictation: Dictation | None = None) -> StoredMessage:
        """Append a message under `parent_id` (None: a first message) and make it the active branch.

        A tool message names the call it answers and that tool; its finish_reason says how the call
        ended (allowed, always, declined, stopped, unknown). A user message's pictures are saved with it, and
        what the speech model heard where it was spoken."""
        if role not in ROLES or state not in STATES:
            raise HistoryError(f"Unknown message role {role!r} or state {state!r}.", "other")
        message = StoredMessage(message_id or new_id(), chat_id, parent_id, role, text, state,  # type: ignore[arg-type]
                                time.time(), finish_reason=finish_reason, tool_call_id=tool_call_id,
                                tool_name=tool_name, images=images, dictation=dictation)
        with self._write("save the message") as db:
            message_rows.insert_message(db, message)
        return message

    def message(self, message_id: str) -> StoredMessage:
        rows = self._rows("read the message", f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        if not rows:
            raise HistoryError(f"The message {message_id} is not in the history (was it deleted?).", "missing")
        return message_from_row(rows[0])

    def update_streaming_text(self, message_id: str, text: str | None, reasoning: str | None = None) -> bool:
        """Save the answer and its thinking so far (None: unchanged); False when it is no longer streaming."""
        with self._write("save the answer so far") as db:
            return message_rows.update_streaming(db, message_id, text, reasoning)

    def finish_message(self, message_id: str, text: str | None = None, state: str = "complete",
                       prompt_tokens: int | None = None, generated_tokens: int | None = None,
                       timings: dict[str, Any] | None = None, finish_reason: str | None = None,
                       reasoning: str | None = None, tool_calls: tuple[ToolCall, ...] = ()) -> None:
        """The answer is done (or stopped): its final text and thinking (None: as streamed), state and numbers."""
        if state not in STATES:
            raise HistoryError(f"Unknown message state {state!r}.", "other")
        with self._write("save the answer") as db:
            message_rows.finish(db, message_id, text, state, prompt_tokens, generated_tokens, timings, finish_reason,
                                reasoning, tool_calls)

    def mark_interrupted_on_startup(self) -> int:
        """Answers left 'streaming' by a crash or kill become 'interrupted'; returns how many."""
        with self._write("mark unfinished answers") as db:
            return db.execute("UPDATE messages SET state = 'interrupted' WHERE state = 'streaming'").rowcount

    def edit_message(self, message_id: str, text: str, new_message_id: str | None = None,
                     images: tuple[ImagePart, ...] = ()) -> StoredMessage:
        """A new alternative of the message with `text` (and `images`); the old one stays reachable."""
        old = self.message(message_id)
        return self.add_message(old.chat_id, old.role, text, old.parent_id, "complete", new_message_id, images=images)

    def regenerate(self, message_id: str, new_message_id: str | None = None) -> StoredMessage:
        """A new, empty, streaming alternative of an answer; stream into it as usual."""
        old = self.message(message_id)
        return self.add_message(old.chat_id, "assistant", "", old.parent_id, "streaming", new_message_id)

    def siblings(self, message_id: str) -> list[StoredMessage]:
        """The alternatives of a message, itself included, oldest first."""
        old = self.message(message_id)
        rows = self._rows("read the alternatives", message_rows.SIBLINGS_SQL, (old.chat_id, old.parent_id))
        return [message_from_row(row) for row in rows]

    def active_path(self, chat_id: str) -> list[StoredMessage]:
        return self.load_chat(chat_id).path()

    def select_message(self, message_id: str) -> None:
        """Make the branch through this message the active one (switching "< 1/2 >" or a search hit)."""
        with self._write("switch the branch") as db:
            message_rows.select_branch(db, message_id)

    def delete_message(self, message_id: str) -> int:
        """Delete a message and every message below it; returns how many went."""
        with self._write("delete the message") as db:
            return message_rows.delete_subtree(db, message_id)

    # ------------------------------------------------------------ search, export, import

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """Messages of every chat (open, closed, any branch) whose text matches all words of `query`.

        A reasoning model's thinking is not searched: it is folded away in the chat, so a hit
        there would point at words the reader cannot see (app/history/schema.py, version 4).
        """
        match = fts_query(query)
        if not match:
            return []
        rows = self._rows("search the chats", message_rows.SEARCH_SQL, (MATCH_START, MATCH_END, match, limit))
        return [SearchHit(r["chat_id"], r["title"], bool(r["is_open"]), r["id"], r["role"], r["snippet"], r["created"]) for r in rows]

    def export_markdown(self, chat_id: str) -> str:
        snapshot = self.load_chat(chat_id)
        return history_io.export_markdown(snapshot, history_io.stored_documents(self.path.parent / "documents", chat_id))

    def export_json(self, chat_id: str) -> str:
        snapshot = self.load_chat(chat_id)
        return history_io.export_json(snapshot, history_io.stored_documents(self.path.parent / "documents", chat_id))

    def import_file(self, path: str | Path) -> Chat:
        return self.import_json(history_io.read_import_file(path), str(path))

    def import_json(self, text: str, source: str = "The file") -> Chat:
        """A new chat from an export; checked completely first, then written in one transaction."""
        parsed = history_io.parse_import(text, source)
        chat_id = new_id()
        with self._write("import the chat") as db:
            insert_imported(db, parsed, chat_id, next_tab_order(db), new_id)
        return self.chat(chat_id)

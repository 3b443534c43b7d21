"""The SQL of HistoryStore's message operations: save, stream, finish, switch branch, delete, search.

Each function takes the connection inside the store's write transaction (or a plain read) and does
only the SQL; HistoryStore opens the transaction, words SQLite's failures for a person and keeps
the public method names HistoryClient queues (app/history/store.py).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from app.chat.title import title_from_text
from app.history.images import insert_images
from app.history.parts import dump_dictation, dump_tool_calls
from app.history.records import HistoryError, StoredMessage
from app.history.rows import MESSAGE_COLUMNS, chat_title_auto, dump_json, point_to, user_message_count
from engine.documents.prompt import split_message
from engine.protocol import ToolCall

# The alternatives under one parent (or among a chat's roots), oldest first.
SIBLINGS_SQL = f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE chat_id = ? AND parent_id IS ? ORDER BY seq"

# Every message of every chat (open, closed, any branch) matching an FTS5 query, best first.
SEARCH_SQL = (
    "SELECT m.id, m.chat_id, m.role, m.created, c.title, c.is_open,"
    " snippet(messages_fts, 0, ?, ?, '…', 16) AS snippet"
    " FROM messages_fts JOIN messages m ON m.seq = messages_fts.rowid JOIN chats c ON c.id = m.chat_id"
    " WHERE messages_fts MATCH ? AND c.deleted_at IS NULL ORDER BY bm25(messages_fts) LIMIT ?"
)


def insert_message(db: sqlite3.Connection, message: StoredMessage) -> None:
    """Save a new message under its parent and make it the active branch; a chat's first question names it."""
    chat_id, parent_id = message.chat_id, message.parent_id
    title_auto = chat_title_auto(db, chat_id)
    if parent_id is not None and not db.execute(
            "SELECT 1 FROM messages WHERE id = ? AND chat_id = ?", (parent_id, chat_id)).fetchone():
        raise HistoryError(f"The message {parent_id} is not in chat {chat_id}.", "missing")
    db.execute("INSERT INTO messages (id, chat_id, parent_id, role, text, state, created, tool_call_id, tool_name,"
               " finish_reason, dictation) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
               (message.id, chat_id, parent_id, message.role, message.text, message.state, message.created,
                message.tool_call_id, message.tool_name, message.finish_reason, dump_dictation(message.dictation)))
    insert_images(db, message.id, message.images)
    point_to(db, chat_id, parent_id, message.id)
    if message.role == "user" and title_auto and user_message_count(db, chat_id) == 1:
        db.execute("UPDATE chats SET title = ? WHERE id = ?", (title_from_text(split_message(message.text)[0]), chat_id))
    db.execute("UPDATE chats SET updated = ? WHERE id = ?", (message.created, chat_id))


def update_streaming(db: sqlite3.Connection, message_id: str, text: str | None, reasoning: str | None) -> bool:
    """Save the answer and its thinking so far (None: unchanged); False when it is no longer streaming."""
    cursor = db.execute("UPDATE messages SET text = COALESCE(?, text), reasoning = COALESCE(?, reasoning)"
                        " WHERE id = ? AND state = 'streaming'", (text, reasoning, message_id))
    return cursor.rowcount > 0


def finish(db: sqlite3.Connection, message_id: str, text: str | None, state: str, prompt_tokens: int | None,
           generated_tokens: int | None, timings: dict[str, Any] | None, finish_reason: str | None,
           reasoning: str | None, tool_calls: tuple[ToolCall, ...]) -> None:
    """The answer's final text and thinking (None: as streamed), state and numbers; its chat was just used."""
    cursor = db.execute(
        "UPDATE messages SET text = COALESCE(?, text), reasoning = COALESCE(?, reasoning), state = ?,"
        " prompt_tokens = ?, generated_tokens = ?, timings = ?, finish_reason = ?, tool_calls = ? WHERE id = ?",
        (text, reasoning, state, prompt_tokens, generated_tokens, dump_json(timings or {}), finish_reason,
         dump_tool_calls(tool_calls), message_id),
    )
    if cursor.rowcount == 0:
        raise HistoryError(f"The message {message_id} is not in the history (was it deleted?).", "missing")
    db.execute("UPDATE chats SET updated = ? WHERE id = (SELECT chat_id FROM messages WHERE id = ?)",
               (time.time(), message_id))


def select_branch(db: sqlite3.Connection, message_id: str) -> None:
    """Point every ancestor (and the chat's root) at the branch through this message."""
    ancestry = db.execute(
        "WITH RECURSIVE up(id, parent_id, chat_id) AS (SELECT id, parent_id, chat_id FROM messages WHERE id = ?"
        " UNION ALL SELECT m.id, m.parent_id, m.chat_id FROM messages m JOIN up ON m.id = up.parent_id)"
        " SELECT id, parent_id, chat_id FROM up", (message_id,)).fetchall()
    for row in ancestry:
        point_to(db, row["chat_id"], row["parent_id"], row["id"])


def delete_subtree(db: sqlite3.Connection, message_id: str) -> int:
    """Delete a message and every message below it; returns how many went."""
    db.execute(
        "WITH RECURSIVE down(id) AS (SELECT id FROM messages WHERE id = ?"
        " UNION ALL SELECT m.id FROM messages m JOIN down ON m.parent_id = down.id)"
        " DELETE FROM messages WHERE id IN down", (message_id,))
    count = int(db.execute("SELECT changes()").fetchone()[0])  # rowcount is -1 after a WITH
    db.execute("UPDATE messages SET active_child_id = NULL WHERE active_child_id = ?", (message_id,))
    db.execute("UPDATE chats SET active_root_id = NULL WHERE active_root_id = ?", (message_id,))
    return count

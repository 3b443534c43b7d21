"""The SQL below HistoryStore: rows to records and back, chats and tabs, branch pointers, import rows, FTS5 queries.

The message operations' SQL is in app/history/message_rows.py."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from app.history.images import insert_images
from app.history.import_export import ImportedChat
from app.history.parts import dump_dictation, dump_tool_calls, load_dictation, load_tool_calls
from app.chat.title import DEFAULT_TITLE, title_from_text
from app.history.records import Chat, HistoryError, StoredMessage
from engine.protocol import ImagePart

CHAT_COLUMNS = (
    "id, title, created, updated, model, settings, is_open, tab_order, scroll_position, "
    "title_auto, active_root_id, deleted_at, pinned, folder_id"
)
MESSAGE_COLUMNS = (
    "id, chat_id, parent_id, role, text, state, created, prompt_tokens, generated_tokens, "
    "timings, finish_reason, active_child_id, reasoning, tool_calls, tool_call_id, tool_name, dictation"
)


def dump_json(value: dict[str, Any]) -> str:
    # default=str: an odd settings value must never cost the user a saved chat.
    return json.dumps(value, ensure_ascii=False, default=str)


def next_tab_order(db: sqlite3.Connection) -> int:
    """The place after the last open tab."""
    return int(db.execute("SELECT COALESCE(MAX(tab_order) + 1, 0) FROM chats WHERE is_open = 1").fetchone()[0])


def set_open_tabs(db: sqlite3.Connection, chat_ids: list[str], current: str | None) -> None:
    """The tabs now open, left to right, and the one in front; every other chat is closed."""
    db.execute("UPDATE chats SET is_open = 0, tab_order = NULL WHERE is_open = 1")
    for order, chat_id in enumerate(chat_ids):
        db.execute("UPDATE chats SET is_open = 1, tab_order = ? WHERE id = ?", (order, chat_id))
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('current_tab', ?)", (current or "",))


def insert_chat(db: sqlite3.Connection, chat_id: str, title: str, model: str, settings: dict[str, Any],
                open_tab: bool) -> None:
    """A new chat, as the last tab where `open_tab`; an empty title is the default one, named by the first question."""
    now = time.time()
    db.execute(
        "INSERT INTO chats (id, title, created, updated, model, settings, is_open, tab_order, title_auto)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (chat_id, title or DEFAULT_TITLE, now, now, model, dump_json(settings), int(open_tab),
         next_tab_order(db) if open_tab else None, int(not title)),
    )


def merge_chat_settings(db: sqlite3.Connection, chat_id: str, changes: dict[str, Any]) -> None:
    """Merge `changes` into the chat's own settings; other keys stay (nothing where the chat is gone)."""
    row = db.execute("SELECT settings FROM chats WHERE id = ?", (chat_id,)).fetchone()
    if row is not None:
        merged = {**json.loads(row[0]), **changes}
        db.execute("UPDATE chats SET settings = ? WHERE id = ?", (dump_json(merged), chat_id))


def purge_chats(db: sqlite3.Connection, cutoff: float) -> tuple[list[str], int]:
    """Really delete the chats deleted at `cutoff` or before, with their messages: their ids and how many."""
    doomed = "SELECT id FROM chats WHERE deleted_at IS NOT NULL AND deleted_at <= ?"
    chat_ids = [row[0] for row in db.execute(doomed, (cutoff,))]
    db.execute(f"DELETE FROM messages WHERE chat_id IN ({doomed})", (cutoff,))
    return chat_ids, db.execute(f"DELETE FROM chats WHERE id IN ({doomed})", (cutoff,)).rowcount


def chat_from_row(row: sqlite3.Row) -> Chat:
    return Chat(
        row["id"], row["title"], row["created"], row["updated"], row["model"], json.loads(row["settings"]),
        bool(row["is_open"]), row["tab_order"], row["scroll_position"], bool(row["title_auto"]),
        row["active_root_id"], row["deleted_at"] is not None, bool(row["pinned"]), row["folder_id"],
    )


def message_from_row(row: sqlite3.Row, images: tuple[ImagePart, ...] = ()) -> StoredMessage:
    return StoredMessage(
        row["id"], row["chat_id"], row["parent_id"], row["role"], row["text"], row["state"], row["created"],
        row["prompt_tokens"], row["generated_tokens"], json.loads(row["timings"]), row["finish_reason"],
        row["active_child_id"], row["reasoning"], load_tool_calls(row["tool_calls"]), row["tool_call_id"],
        row["tool_name"], images, load_dictation(row["dictation"]),
    )


def fts_query(query: str) -> str:
    """Every word of the query, quoted (so FTS5 syntax in it is just text); the last one as a prefix."""
    words = [word for word in query.replace('"', " ").split() if any(ch.isalnum() for ch in word)]
    if not words:
        return ""
    quoted = [f'"{word}"' for word in words]
    return " ".join(quoted) + "*"


def chat_title_auto(db: sqlite3.Connection, chat_id: str) -> bool:
    row = db.execute("SELECT title_auto FROM chats WHERE id = ?", (chat_id,)).fetchone()
    if row is None:
        raise HistoryError(f"The chat {chat_id} is not in the history (was it deleted?).", "missing")
    return bool(row[0])


def user_message_count(db: sqlite3.Connection, chat_id: str) -> int:
    return int(db.execute("SELECT COUNT(*) FROM messages WHERE chat_id = ? AND role = 'user'", (chat_id,)).fetchone()[0])


def point_to(db: sqlite3.Connection, chat_id: str, parent_id: str | None, message_id: str) -> None:
    """Make `message_id` the chosen alternative under its parent (or among the chat's roots)."""
    if parent_id is None:
        db.execute("UPDATE chats SET active_root_id = ? WHERE id = ?", (message_id, chat_id))
    else:
        db.execute("UPDATE messages SET active_child_id = ? WHERE id = ?", (message_id, parent_id))


def insert_imported(db: sqlite3.Connection, parsed: ImportedChat, chat_id: str, tab_order: int, make_id: Callable[[], str]) -> None:
    """Write a checked import as a new open chat; messages get new ids, links follow them."""
    now = time.time()
    ids = {m.key: make_id() for m in parsed.messages}
    first_user = next((m.text for m in parsed.messages if m.role == "user"), "")
    db.execute(
        "INSERT INTO chats (id, title, created, updated, model, settings, is_open, tab_order, title_auto, active_root_id)"
        " VALUES (?, ?, ?, ?, ?, ?, 1, ?, 0, ?)",
        (chat_id, parsed.title.strip() or title_from_text(first_user), parsed.created or now, parsed.updated or now,
         parsed.model, dump_json(parsed.settings), tab_order, ids.get(parsed.active_root_key or "")),
    )
    for index, m in enumerate(parsed.messages):
        db.execute(
            f"INSERT INTO messages ({MESSAGE_COLUMNS}) VALUES ({', '.join('?' * 17)})",
            (ids[m.key], chat_id, ids[m.parent_key] if m.parent_key else None, m.role, m.text, m.state,
             m.created if m.created is not None else now + index * 1e-6, m.prompt_tokens, m.generated_tokens,
             dump_json(m.timings), m.finish_reason, ids.get(m.active_child_key or ""), m.reasoning,
             dump_tool_calls(m.tool_calls), m.tool_call_id, m.tool_name, dump_dictation(m.dictation)),
        )
        insert_images(db, ids[m.key], m.images)

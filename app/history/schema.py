"""The chat history's SQLite schema: numbered migrations from version 1 on.

`PRAGMA user_version` holds the version a database is at. `migrate` runs every
step above it, each in its own transaction, so a database is always at one
whole version. A new release only ever appends a step: never edit a shipped one.
"""

from __future__ import annotations

import sqlite3

# Version 1: the two tables as the first release stored them.
_V1 = (
    """CREATE TABLE chats (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        created REAL NOT NULL,
        updated REAL NOT NULL,
        model TEXT NOT NULL DEFAULT '',
        settings TEXT NOT NULL DEFAULT '{}'
    )""",
    # seq aliases the rowid so it never changes (VACUUM may renumber a bare
    # rowid); the FTS index in version 3 points at it.
    """CREATE TABLE messages (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        chat_id TEXT NOT NULL REFERENCES chats(id),
        parent_id TEXT REFERENCES messages(id),
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
        text TEXT NOT NULL DEFAULT '',
        prompt_tokens INTEGER,
        generated_tokens INTEGER,
        timings TEXT NOT NULL DEFAULT '{}',
        state TEXT NOT NULL DEFAULT 'complete'
            CHECK (state IN ('complete', 'streaming', 'interrupted')),
        created REAL NOT NULL
    )""",
    "CREATE INDEX messages_by_chat ON messages(chat_id, seq)",
    "CREATE INDEX messages_by_parent ON messages(parent_id)",
)

# Version 2: what restoring a session and switching branches needs.
_V2 = (
    "ALTER TABLE chats ADD COLUMN is_open INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE chats ADD COLUMN tab_order INTEGER",
    "ALTER TABLE chats ADD COLUMN scroll_position REAL NOT NULL DEFAULT 0",
    # 1 while the title is still the automatic one (a rename sets 0).
    "ALTER TABLE chats ADD COLUMN title_auto INTEGER NOT NULL DEFAULT 0",
    # Soft delete: a deleted chat can be restored until it is purged.
    "ALTER TABLE chats ADD COLUMN deleted_at REAL",
    # Which root message (and below, which child) the active branch goes through.
    "ALTER TABLE chats ADD COLUMN active_root_id TEXT",
    "ALTER TABLE messages ADD COLUMN active_child_id TEXT",
    "ALTER TABLE messages ADD COLUMN finish_reason TEXT",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

# Version 3: full-text search over every message, kept in step by triggers.
_V3 = (
    """CREATE VIRTUAL TABLE messages_fts USING fts5(
        text, content='messages', content_rowid='seq',
        tokenize='unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, text) VALUES (new.seq, new.text);
    END""",
    """CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
    END""",
    """CREATE TRIGGER messages_fts_update AFTER UPDATE OF text ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
        INSERT INTO messages_fts(rowid, text) VALUES (new.seq, new.text);
    END""",
    # Index what older versions stored before the index existed.
    "INSERT INTO messages_fts(messages_fts) VALUES ('rebuild')",
)

# Version 4: the parts of a message besides its text: a reasoning model's thinking, the tool calls an
# answer made (JSON: [{"id", "name", "arguments"}]) and, for a "tool" message (a new role), the call it
# answers. A CHECK cannot be altered in SQLite, so the table is rebuilt: the old one is renamed away,
# the rows are copied with their seq (the FTS index points at it, so it stays valid), the old one
# dropped. The triggers go first (a rename would rewrite them) and come back on the new table. Search
# keeps indexing the answer text only: the thinking is folded away, and an update of it (every second
# while a model thinks) never touches the index.
_MESSAGE_COLUMNS_V3 = (
    "seq, id, chat_id, parent_id, role, text, prompt_tokens, generated_tokens, timings, state, created,"
    " active_child_id, finish_reason"
)
_V4 = (
    "DROP TRIGGER messages_fts_insert",
    "DROP TRIGGER messages_fts_delete",
    "DROP TRIGGER messages_fts_update",
    "ALTER TABLE messages RENAME TO messages_v3",
    """CREATE TABLE messages (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        chat_id TEXT NOT NULL REFERENCES chats(id),
        parent_id TEXT REFERENCES messages(id),
        role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
        text TEXT NOT NULL DEFAULT '',
        prompt_tokens INTEGER,
        generated_tokens INTEGER,
        timings TEXT NOT NULL DEFAULT '{}',
        state TEXT NOT NULL DEFAULT 'complete'
            CHECK (state IN ('complete', 'streaming', 'interrupted')),
        created REAL NOT NULL,
        active_child_id TEXT,
        finish_reason TEXT,
        reasoning TEXT NOT NULL DEFAULT '',
        tool_calls TEXT NOT NULL DEFAULT '[]',
        tool_call_id TEXT NOT NULL DEFAULT '',
        tool_name TEXT NOT NULL DEFAULT ''
    )""",
    f"INSERT INTO messages ({_MESSAGE_COLUMNS_V3}) SELECT {_MESSAGE_COLUMNS_V3} FROM messages_v3 ORDER BY seq",
    "DROP TABLE messages_v3",
    "CREATE INDEX messages_by_chat ON messages(chat_id, seq)",
    "CREATE INDEX messages_by_parent ON messages(parent_id)",
) + _V3[1:4]  # the same three triggers as version 3, on the new table

# Pinned chats stay at the top of the sidebar. Its own step, appended after every other one.
_PINNED = ("ALTER TABLE chats ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0",)

# A message's pictures (app/history/images.py): the file's bytes, in order; gone with their message.
_PICTURES = (
    """CREATE TABLE message_images (
        message_id TEXT NOT NULL REFERENCES messages(id),
        position INTEGER NOT NULL,
        mime TEXT NOT NULL,
        data BLOB NOT NULL,
        PRIMARY KEY (message_id, position)
    )""",
    """CREATE TRIGGER message_images_delete AFTER DELETE ON messages BEGIN
        DELETE FROM message_images WHERE message_id = old.id;
    END""",
)

# The memory tool's notes (app/history/notes.py): kept across chats, each shown in Settings, Memory, where
# the person edits, deletes or turns it off (enabled 0: neither listed to the model nor put in a prompt);
# and the chats whose switch turned memory off (no memory tool, no notes in their prompt).
_MEMORY = (
    "ALTER TABLE chats ADD COLUMN memory_off INTEGER NOT NULL DEFAULT 0",
    """CREATE TABLE memory_notes (
        id INTEGER PRIMARY KEY,
        text TEXT NOT NULL,
        enabled INTEGER NOT NULL DEFAULT 1,
        created REAL NOT NULL,
        updated REAL NOT NULL
    )""",
)

# Folders in the sidebar: a chat is in one folder or none; a folder remembers whether it is folded.
_FOLDERS = (
    """CREATE TABLE folders (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        position INTEGER NOT NULL DEFAULT 0,
        collapsed INTEGER NOT NULL DEFAULT 0,
        created REAL NOT NULL
    )""",
    "ALTER TABLE chats ADD COLUMN folder_id TEXT REFERENCES folders(id)",
)

# A user message that was spoken (the microphone button): what the speech model heard, as JSON
# {"transcript", "language", "model", "seconds"} (app/history/parts.py); "" for a typed message.
_DICTATION = ("ALTER TABLE messages ADD COLUMN dictation TEXT NOT NULL DEFAULT ''",)

MIGRATIONS: tuple[tuple[str, ...], ...] = (_V1, _V2, _V3, _V4, _PINNED, _PICTURES, _MEMORY, _FOLDERS, _DICTATION)
SCHEMA_VERSION = len(MIGRATIONS)


class NewerSchemaError(Exception):
    """The database was written by a newer Hearth than this one."""

    def __init__(self, found: int) -> None:
        super().__init__(f"schema version {found} is newer than {SCHEMA_VERSION}")
        self.found = found


def schema_version(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def migrate(connection: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the database up to `target`; returns the version it started at.

    The connection must be in autocommit mode (isolation_level=None) so the
    explicit BEGIN/COMMIT here are the only transactions.
    """
    start = schema_version(connection)
    if start > SCHEMA_VERSION:
        raise NewerSchemaError(start)
    for version in range(start + 1, target + 1):
        connection.execute("BEGIN IMMEDIATE")
        try:
            for statement in MIGRATIONS[version - 1]:
                connection.execute(statement)
            # PRAGMA takes no parameters; version is our own int.
            connection.execute(f"PRAGMA user_version = {version:d}")
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
    return start

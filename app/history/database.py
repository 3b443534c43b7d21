"""Opening the history database file: where it lives, recovery, and errors a person can read.

A damaged file is moved aside with a timestamp and a fresh one is started (the
caller reports where the old one went). A full disk, a read-only folder or a
locked file becomes a HistoryError whose text says what happened and what to do.
"""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime
from pathlib import Path

import platformdirs

from app.history.records import HistoryError
from app.history.schema import NewerSchemaError, migrate
from engine.paths import user_path

DATA_DIR_ENV = "HEARTH_DATA_DIR"
DATABASE_NAME = "history.sqlite3"
BUSY_TIMEOUT_S = 5.0

# (kind, SQLite error-name prefixes, words in the message for Pythons before 3.11)
_KINDS = (
    ("corrupt", ("SQLITE_CORRUPT", "SQLITE_NOTADB"), ("malformed", "not a database")),
    ("full", ("SQLITE_FULL",), ("is full",)),
    ("readonly", ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH"), ("readonly", "unable to open")),
    ("locked", ("SQLITE_BUSY", "SQLITE_LOCKED"), ("locked",)),
    ("io", ("SQLITE_IOERR",), ("i/o error",)),
)


class DatabaseDamaged(Exception):
    """The file is not a readable SQLite database; internal to opening."""


def default_database_path() -> Path:
    """history.sqlite3 under the user data dir, or under $HEARTH_DATA_DIR when set."""
    override = os.environ.get(DATA_DIR_ENV)
    folder = Path(user_path(override)) if override else Path(platformdirs.user_data_dir("Hearth", appauthor=False))
    return folder / DATABASE_NAME


def error_kind(error: sqlite3.Error) -> str:
    name = getattr(error, "sqlite_errorname", "") or ""
    text = str(error).lower()
    for kind, prefixes, words in _KINDS:
        if name.startswith(prefixes) or (not name and any(word in text for word in words)):
            return kind
    return "other"


def human_error(error: sqlite3.Error | OSError, path: Path, action: str) -> HistoryError:
    """A HistoryError saying what failed, why, and what the person can do."""
    kind = error_kind(error) if isinstance(error, sqlite3.Error) else "readonly"
    folder = path.parent
    reasons = {
        "full": f"the disk holding {folder} is full. Free some space",
        "readonly": f"Hearth cannot write to {folder} (read-only or not accessible: {_detail(error)}). "
        f"Check its permissions or set {DATA_DIR_ENV} to a writable folder",
        "locked": f"{path} is locked by another program (is Hearth running twice?). Close the other one",
        "io": f"the disk reported an error on {path} ({_detail(error)}). Check the disk",
        "corrupt": f"{path} is damaged. Restart Hearth: it moves the damaged file aside and starts a fresh history",
        "other": f"SQLite reported: {_detail(error)} (file {path})",
    }
    message = f"Could not {action}: {reasons[kind]}. Until then your chats stay in this window but are not saved."
    return HistoryError(message, kind, str(path))


def _detail(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def open_database(path: Path) -> tuple[sqlite3.Connection, Path | None]:
    """A migrated connection and, when the old file was damaged, where it was moved."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise human_error(error, path, "create the chat history folder") from None
    try:
        return _connect(path), None
    except DatabaseDamaged:
        aside = move_aside(path)
        return _connect(path), aside


def _connect(path: Path) -> sqlite3.Connection:
    try:
        # Autocommit: the store writes its own BEGIN IMMEDIATE ... COMMIT.
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as error:
        raise human_error(error, path, "open the chat history") from None
    try:
        _prepare(connection)
    except sqlite3.Error as error:
        connection.close()
        if error_kind(error) == "corrupt":
            raise DatabaseDamaged(str(error)) from None
        raise human_error(error, path, "open the chat history") from None
    except NewerSchemaError as error:
        connection.close()
        raise HistoryError(
            f"{path} was written by a newer Hearth (schema version {error.found}); this one cannot read it. "
            f"Update Hearth, or set {DATA_DIR_ENV} to another folder.", "newer", str(path),
        ) from None
    except DatabaseDamaged:
        connection.close()
        raise
    return connection


def _prepare(connection: sqlite3.Connection) -> None:
    connection.row_factory = sqlite3.Row
    connection.execute("PRAGMA foreign_keys = ON")
    # WAL: a reader never waits for the writer, and a killed process loses only
    # what was not yet committed. NORMAL is crash-safe for the app in WAL mode.
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    verdict = connection.execute("PRAGMA quick_check").fetchone()[0]
    if verdict != "ok":
        raise DatabaseDamaged(verdict)
    migrate(connection)


def move_aside(path: Path) -> Path:
    """Rename a damaged database (and its -wal/-shm files) to name.corrupt-YYYYmmdd-HHMMSS."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    number = 1
    while aside.exists():
        number += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{number}")
    try:
        path.replace(aside)
        for suffix in ("-wal", "-shm"):
            companion = path.with_name(path.name + suffix)
            if companion.exists():
                companion.replace(aside.with_name(aside.name + suffix))
    except OSError as error:
        raise human_error(error, path, "move the damaged chat history aside") from None
    return aside

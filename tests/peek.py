"""Reading a live app's history database from a test without disturbing its writer (the kill tests)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def peek(database: Path, query: str, params: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
    """The query's first row, read-only; None while the file does not exist yet, is being created, or has no row."""
    if not database.exists():
        return None
    try:
        db = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return None
    try:
        row = db.execute(query, params).fetchone()
    except sqlite3.Error:  # the file is being created: try again
        return None
    finally:
        db.close()
    return tuple(row) if row else None

"""A message's pictures in the history: rows of their own beside the message, in the export as base64.

The bytes are stored as the user attached them (PNG, JPEG or WebP), in the same database and the
same transaction as their message, so a message is never saved without its pictures or the other
way round; a trigger deletes them with their message (a delete, a purged chat). The JSON export
carries them as {"mime", "data"} (base64) and an import checks them as the API does (engine/images.py).
"""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Sequence
from typing import Any

from app.history.records import HistoryImportError
from engine.images import ImageError, from_base64
from engine.protocol import ImagePart


def insert_images(db: sqlite3.Connection, message_id: str, images: Sequence[ImagePart]) -> None:
    db.executemany("INSERT INTO message_images (message_id, position, mime, data) VALUES (?, ?, ?, ?)",
                   [(message_id, position, image.mime, image.data) for position, image in enumerate(images)])


def images_of_chat(db: sqlite3.Connection, chat_id: str) -> dict[str, tuple[ImagePart, ...]]:
    """message id -> its pictures in order, for the messages of one chat that have any."""
    rows = db.execute("SELECT i.message_id, i.mime, i.data FROM message_images i JOIN messages m ON m.id = i.message_id"
                      " WHERE m.chat_id = ? ORDER BY i.message_id, i.position", (chat_id,)).fetchall()
    found: dict[str, list[ImagePart]] = {}
    for message_id, mime, data in rows:
        found.setdefault(message_id, []).append(ImagePart(bytes(data), mime))
    return {message_id: tuple(images) for message_id, images in found.items()}


def images_to_json(images: Sequence[ImagePart]) -> list[dict[str, str]]:
    return [{"mime": image.mime, "data": base64.b64encode(image.data).decode("ascii")} for image in images]


def images_from_json(value: Any, where: str) -> tuple[ImagePart, ...]:
    """An import file's "images"; a HistoryImportError names what is wrong."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise HistoryImportError(f"{where}: \"images\" should be a list.")
    images = []
    for number, item in enumerate(value, 1):
        data = item.get("data") if isinstance(item, dict) else None
        if not isinstance(data, str):
            raise HistoryImportError(f"{where}: picture {number} should have its base64 \"data\".")
        try:
            images.append(from_base64(data))
        except ImageError as error:
            raise HistoryImportError(f"{where}: picture {number}: {error}.") from None
    return tuple(images)


def markdown_lines(images: Sequence[ImagePart]) -> list[str]:
    """The pictures listed under their message (their bytes are in the JSON export)."""
    if not images:
        return []
    return [f"*Picture {number}: {image.mime}, {len(image.data):,} bytes*  " for number, image in enumerate(images, 1)] + [""]

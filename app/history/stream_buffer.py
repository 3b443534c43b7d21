"""The text of each answer while it streams, and which answers changed since the last write (no Qt)."""

from __future__ import annotations


class StreamBuffer:
    """Chunks per message id; joined once per read, not once per token."""

    def __init__(self) -> None:
        self._chunks: dict[str, list[str]] = {}
        self._dirty: dict[str, None] = {}  # insertion-ordered set

    def begin(self, message_id: str) -> None:
        self._chunks[message_id] = []

    def append(self, message_id: str, chunk: str) -> None:
        self._chunks.setdefault(message_id, []).append(chunk)
        self._dirty[message_id] = None

    def text(self, message_id: str) -> str:
        chunks = self._chunks.get(message_id, [])
        if len(chunks) > 1:
            chunks[:] = ["".join(chunks)]
        return chunks[0] if chunks else ""

    def take_dirty(self) -> list[tuple[str, str]]:
        """(message id, whole text so far) for each answer that changed; they are clean afterwards."""
        dirty = [(message_id, self.text(message_id)) for message_id in self._dirty]
        self._dirty.clear()
        return dirty

    def end(self, message_id: str) -> str:
        text = self.text(message_id)
        self._chunks.pop(message_id, None)
        self._dirty.pop(message_id, None)
        return text

    def __contains__(self, message_id: str) -> bool:
        return message_id in self._chunks

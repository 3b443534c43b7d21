"""HistoryClient: the GUI thread's typed handle on the chat history; no method blocks but `close`.

Each method queues one HistoryStore call to the history thread (app/history/worker.py)
and returns at once. Requests run in the order they were made, so "add a message,
then stream into it" needs no waiting. Ids are made here (`create_chat`,
`add_message`, ... return them at once), so a tab can refer to a message the disk
has not seen yet. A method that reads takes `on_done` (and optionally `on_error`);
both run on the GUI thread. A failed write without `on_error` is reported once by
`error_occurred` until a later call succeeds.

Streaming: `start_answer` (or `regenerate`) gives the answer's id;
`append_streaming_text` and `append_streaming_reasoning` (a reasoning model's
thinking) only buffer, and a timer writes each answer that grew, text and
thinking in one write, once a second; `finish_turn` writes the final parts and numbers.
On startup connect `opened(StartupReport)` and `unavailable(message)`, then `start()`;
on quit `close()` writes what is buffered and joins the thread. The thread, the queue and the
callbacks are HistoryConnection's (app/history/connection.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QTimer, Slot

from app.history import folders
from app.history.connection import Failed, HistoryConnection
from app.history.records import Chat, ChatSnapshot, Folder, SearchHit, StoredMessage
from app.history.store import HistoryStore, new_id
from app.history.stream_buffer import StreamBuffer
from engine.protocol import Dictation, ImagePart, ToolCall, TurnFinished

# Answers that ended without finishing stay visibly cut short.
_INTERRUPTED_REASONS = frozenset({"error", "closed", "interrupted"})


class HistoryClient(HistoryConnection):
    """The GUI thread's handle on the history: every method returns at once."""

    def __init__(self, path: str | Path | None = None, flush_interval_ms: int = 1000, parent: QObject | None = None) -> None:
        super().__init__(path, parent)
        self._buffer = StreamBuffer()  # the answers' text
        self._thinking = StreamBuffer()  # their reasoning, written with the text
        self.streaming_writes = 0  # how many coalesced streaming writes were sent
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(flush_interval_ms)
        self._flush_timer.timeout.connect(self.flush_streaming)

    # ------------------------------------------------------------ life

    def start(self) -> None:
        super().start()
        self._flush_timer.start()

    def close(self, timeout_ms: int = 10000) -> bool:
        """Write what is buffered, close the database and join the thread; False if it hung."""
        if not self._closed:
            self._flush_timer.stop()
            self.flush_streaming()
        return super().close(timeout_ms)

    # ------------------------------------------------------------ chats and tabs

    def create_chat(self, title: str = "", model: str = "", settings: dict[str, Any] | None = None,
                    chat_id: str | None = None, open_tab: bool = True) -> str:
        """The same arguments, in the same order, as HistoryStore.create_chat; returns the chat's id."""
        chat_id = chat_id or new_id()
        self._write(HistoryStore.create_chat, title, model, settings, chat_id, open_tab)
        return chat_id

    def rename_chat(self, chat_id: str, title: str) -> None:
        self._write(HistoryStore.rename_chat, chat_id, title)

    def set_pinned(self, chat_id: str, pinned: bool) -> None:
        self._write(HistoryStore.set_pinned, chat_id, pinned)

    def delete_chat(self, chat_id: str) -> None:
        """Hidden at once, purged at the next start."""
        self._write(HistoryStore.delete_chat, chat_id)

    def drop_empty_closed_chats(self) -> None:
        """Closed chats without a word leave the chat list (as at a start)."""
        self._write(HistoryStore.drop_empty_closed_chats)

    def set_open_tabs(self, chat_ids: list[str], current: str | None = None) -> None:
        self._write(HistoryStore.set_open_tabs, chat_ids, current)

    def open_tab(self, chat_id: str) -> None:
        self._write(HistoryStore.open_tab, chat_id)

    def update_chat_settings(self, chat_id: str, changes: dict[str, Any]) -> None:
        """Merge into the chat's stored settings (its Think choice, ...)."""
        self._write(HistoryStore.update_chat_settings, chat_id, dict(changes))

    def set_scroll_position(self, chat_id: str, position: float) -> None:
        self._write(HistoryStore.set_scroll_position, chat_id, position)

    # ------------------------------------------------------------ messages and branches

    def add_message(self, chat_id: str, role: str, text: str, parent_id: str | None = None,
                    images: tuple[ImagePart, ...] = (), dictation: Dictation | None = None) -> str:
        message_id = new_id()
        self._write(HistoryStore.add_message, chat_id, role, text, parent_id, "complete", message_id, images=images,
                    dictation=dictation)
        return message_id

    def add_tool_message(self, chat_id: str, text: str, parent_id: str | None, tool_call_id: str, tool_name: str,
                         outcome: str) -> str:
        """A tool call's result (or why it did not run) under the answer that made the call."""
        message_id = new_id()
        self._write(HistoryStore.add_message, chat_id, "tool", text, parent_id, "complete", message_id,
                    tool_call_id=tool_call_id, tool_name=tool_name, finish_reason=outcome)
        return message_id

    def edit_message(self, message_id: str, text: str, images: tuple[ImagePart, ...] = ()) -> str:
        """A new alternative of the message (with its pictures); the old one stays reachable."""
        new_message_id = new_id()
        self._write(HistoryStore.edit_message, message_id, text, new_message_id, images)
        return new_message_id

    def select_message(self, message_id: str) -> None:
        """Make the branch through this message the active one."""
        self._write(HistoryStore.select_message, message_id)

    def delete_message(self, message_id: str) -> None:
        """The message and everything below it."""
        self._write(HistoryStore.delete_message, message_id)

    # ------------------------------------------------------------ streaming answers

    def start_answer(self, chat_id: str, parent_id: str | None) -> str:
        """An empty assistant message in state "streaming" under `parent_id`; returns its id."""
        message_id = new_id()
        self._write(HistoryStore.add_message, chat_id, "assistant", "", parent_id, "streaming", message_id)
        self._begin(message_id)
        return message_id

    def regenerate(self, message_id: str) -> str:
        """A new empty alternative of an answer, streaming; returns its id."""
        new_message_id = new_id()
        self._write(HistoryStore.regenerate, message_id, new_message_id)
        self._begin(new_message_id)
        return new_message_id

    def _begin(self, message_id: str) -> None:
        self._buffer.begin(message_id)
        self._thinking.begin(message_id)

    def append_streaming_text(self, message_id: str, chunk: str) -> None:
        self._buffer.append(message_id, chunk)

    def append_streaming_reasoning(self, message_id: str, chunk: str) -> None:
        self._thinking.append(message_id, chunk)

    def streamed_reasoning(self, message_id: str) -> str:
        """What the model has thought for an answer so far ("" once it is finished)."""
        return self._thinking.text(message_id) if message_id in self._thinking else ""

    def streamed_text(self, message_id: str) -> str:
        """What has streamed into an answer so far ("" once it is finished)."""
        return self._buffer.text(message_id) if message_id in self._buffer else ""

    @Slot()
    def flush_streaming(self) -> None:
        """Write each answer that grew since the last flush (the timer calls this once a second)."""
        texts, thoughts = dict(self._buffer.take_dirty()), dict(self._thinking.take_dirty())
        for message_id in {**thoughts, **texts}:  # one write per answer, whichever part grew
            self.streaming_writes += 1
            self._write(HistoryStore.update_streaming_text, message_id, texts.get(message_id), thoughts.get(message_id))

    def finish_answer(self, message_id: str, text: str | None = None, state: str = "complete", *,
                      prompt_tokens: int | None = None, generated_tokens: int | None = None,
                      timings: dict[str, Any] | None = None, finish_reason: str | None = None,
                      reasoning: str | None = None, tool_calls: tuple[ToolCall, ...] = ()) -> None:
        """The last write of an answer; text or reasoning None: what was streamed."""
        streamed = self._buffer.end(message_id) if message_id in self._buffer else None
        thought = self._thinking.end(message_id) if message_id in self._thinking else None
        self._write(HistoryStore.finish_message, message_id, streamed if text is None else text, state,
                    prompt_tokens, generated_tokens, timings, finish_reason,
                    thought if reasoning is None else reasoning, tool_calls)

    def finish_turn(self, message_id: str, finished: TurnFinished, reasoning_s: float = 0.0,
                    tool_servers: dict[str, str] | None = None) -> None:
        """finish_answer from the engine's TurnFinished (reason, text, thinking, stats).

        `reasoning_s`: how long the thinking took as the window measured it, kept where the stats have
        none (a remote server does not say), so a restored "Thought for 12 s" says what the live one said.
        """
        stats = dataclasses.asdict(finished.stats)
        prompt_tokens, generated_tokens = stats.pop("prompt_tokens", None), stats.pop("generated_tokens", None)
        if not stats.get("reasoning_s") and reasoning_s > 0:
            stats["reasoning_s"] = reasoning_s
        if tool_servers:  # call id -> the MCP server it went to, for the restored cards
            stats["tool_servers"] = tool_servers
        state = "interrupted" if finished.reason in _INTERRUPTED_REASONS else "complete"
        text = finished.text or None  # an error may come with no text: keep what streamed
        self.finish_answer(message_id, text, state, prompt_tokens=prompt_tokens, generated_tokens=generated_tokens,
                           timings=stats, finish_reason=finished.reason, reasoning=finished.reasoning or None,
                           tool_calls=finished.tool_calls)

    def discard_answer(self, message_id: str) -> None:
        """An answer that never got any text nor thinking: neither buffered nor stored."""
        self._buffer.end(message_id)
        self._thinking.end(message_id)
        self.delete_message(message_id)

    # ------------------------------------------------------------ reads: on_done(result) on the GUI thread

    def chat(self, chat_id: str, on_done: Callable[[Chat], None], on_error: Failed | None = None) -> None:
        self._read(on_done, on_error, HistoryStore.chat, chat_id)

    def load_chat(self, chat_id: str, on_done: Callable[[ChatSnapshot], None], on_error: Failed | None = None) -> None:
        self._read(on_done, on_error, HistoryStore.load_chat, chat_id)

    def message(self, message_id: str, on_done: Callable[[StoredMessage], None], on_error: Failed | None = None) -> None:
        self._read(on_done, on_error, HistoryStore.message, message_id)

    def list_chats(self, on_done: Callable[[list[Chat]], None], on_error: Failed | None = None,
                   include_deleted: bool = False) -> None:
        """Every chat, the most recently used first."""
        self._read(on_done, on_error, HistoryStore.list_chats, include_deleted)

    def search(self, query: str, on_done: Callable[[list[SearchHit]], None], on_error: Failed | None = None) -> None:
        self._read(on_done, on_error, HistoryStore.search, query)

    def export_markdown(self, chat_id: str, on_done: Callable[[str], None], on_error: Failed | None = None) -> None:
        self._read(on_done, on_error, HistoryStore.export_markdown, chat_id)

    def export_json(self, chat_id: str, on_done: Callable[[str], None], on_error: Failed | None = None) -> None:
        self._read(on_done, on_error, HistoryStore.export_json, chat_id)

    def import_file(self, path: str | Path, on_done: Callable[[Chat], None], on_error: Failed | None = None) -> None:
        """A new chat from an exported JSON file, checked completely before anything is written."""
        self._read(on_done, on_error, HistoryStore.import_file, path)

    # ------------------------------------------------------------ folders (app/history/folders.py)

    def list_folders(self, on_done: Callable[[list[Folder]], None], on_error: Failed | None = None) -> None:
        self._read(on_done, on_error, folders.list_folders)

    def create_folder(self, name: str) -> str:
        """A new folder, listed last; its id at once."""
        folder_id = new_id()
        self._write(folders.create_folder, folder_id, name)
        return folder_id

    def rename_folder(self, folder_id: str, name: str) -> None:
        self._write(folders.rename_folder, folder_id, name)

    def set_folder_collapsed(self, folder_id: str, collapsed: bool) -> None:
        self._write(folders.set_folder_collapsed, folder_id, collapsed)

    def move_chat(self, chat_id: str, folder_id: str | None) -> None:
        self._write(folders.move_chat, chat_id, folder_id)

    def delete_folder(self, folder_id: str, with_chats: bool) -> None:
        self._write(folders.delete_folder, folder_id, with_chats)

"""The chat history off the GUI thread: HistoryClient (GUI side) and HistoryWorker (its thread).

The worker is a QObject on a QThread named "hearth-history"; it owns the
HistoryStore and so the only sqlite connection. The client lives on the GUI
thread: each call queues a request to the worker and returns at once; results
come back as a callback on the GUI thread (or as a signal). Requests run in the
order they were made, so "add a message, then stream into it" needs no waiting.
Ids are made on the GUI side (`create_chat`, `add_message` ... return them at
once), so a tab can refer to a message the disk has not seen yet.

Integration notes for the window
--------------------------------
All calls below are on `history`, a HistoryClient; none blocks. A call that
reads takes `on_done=` (and optionally `on_error=`) keyword callbacks, which run
on the GUI thread; any other store method works the same way through the client
(`history.rename_chat(chat_id, "Title")`, `history.search("word", on_done=f)`).

On startup: `history = HistoryClient(parent=window)`, connect `opened`,
`unavailable` and `error_occurred`, then `history.start()`.
- `opened(StartupReport)`: `report.tabs` are the tabs to reopen, in order
  (ChatSnapshot: `.chat.id` (also the engine's chat_id), `.chat.title`,
  `.chat.scroll_position`, `.path()` the messages to show);
  `report.current_tab` the chat id to select; `report.interrupted_messages`
  answers a crash cut short (state "interrupted": show Regenerate/Continue);
  `report.recovered_from` not None: the old file was damaged and moved there:
  tell the user that path.
- `unavailable(message)`: nothing will be saved this session; show it and keep
  chats in memory. `error_occurred(message)`: a save failed (disk full ...);
  shown once until a later call succeeds; keep going (streaming text is
  re-sent whole at the next flush, so nothing is lost once space is back).

On send: `chat_id = history.create_chat(model=name, settings=sampling_dict)`
for a new tab; `user_id = history.add_message(chat_id, "user", text,
parent_id=last_message_id_or_None)` (the first user message titles the chat);
`answer_id = history.start_answer(chat_id, parent_id=user_id)`.

On each Token event: `history.append_streaming_text(answer_id, event.text)`.
It only buffers; a one-second timer writes each answer that grew, once.
On TurnFinished: `history.finish_turn(answer_id, event)` (final text, token
counts, timings; reason "error"/"closed" -> "interrupted", else "complete").
Or `finish_answer(answer_id, text=None, state=..., finish_reason=...)`.

Branches: edit a user message: `new_id = history.edit_message(old_id, text)`
then `start_answer(chat_id, new_id)`. Regenerate: `new_id =
history.regenerate(answer_id)`, stream into new_id. Continue an interrupted
answer: `history.resume_answer(answer_id, its_text)`, stream as usual.
"< 1/2 >": `snapshot.position(id)`, `snapshot.siblings(id)`; on a switch,
`history.select_message(sibling_id)` then `history.load_chat(chat_id,
on_done=show)` for the new path. Delete: `history.delete_message(id)` (with
everything below it).

Tabs and list: `history.set_open_tabs(ids_left_to_right, current=id)` after
any open/close/move; `set_scroll_position(chat_id, value)`; `list_chats(
on_done=f)`; `rename_chat`; `delete_chat` + `restore_chat` (undo; purged at
the next start); `search(text, on_done=f)` (SearchHit.snippet_html, then
`select_message(hit.message_id)` + `open_tab(hit.chat_id)`); `export_markdown`
/ `export_json(chat_id, on_done=save_text)`; `import_file(path,
on_done=open_chat, on_error=show)` (an imported chat opens as the last tab).

On quit: `history.close()`: writes what is buffered, closes the database and
joins the thread (the only call that waits).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QObject, QThread, QTimer, Signal, Slot

from app.history.store import HistoryStore, new_id
from app.history.records import ChatSnapshot, HistoryError
from app.misc.qt_compat import guard_emit_refcount_bug

log = logging.getLogger(__name__)
guard_emit_refcount_bug()  # the worker streams many emits too (see app/misc/qt_compat.py)

Callback = Callable[[Any], None]
ErrorCallback = Callable[[str], None]

# What a request may call on the store (the worker adds "open" and "close").
STORE_METHODS = frozenset({
    "create_chat", "chat", "load_chat", "list_chats", "open_tabs", "set_open_tabs", "current_tab", "open_tab",
    "close_tab", "set_scroll_position", "rename_chat", "update_chat_settings", "delete_chat", "restore_chat",
    "purge_deleted", "drop_empty_closed_chats", "add_message", "message", "update_streaming_text", "finish_message", "resume_streaming",
    "edit_message", "regenerate", "siblings", "active_path", "select_message", "delete_message", "search",
    "export_markdown", "export_json", "import_json", "import_file",
})
# Answers that ended without finishing stay visibly cut short.
_INTERRUPTED_REASONS = frozenset({"error", "closed"})


@dataclass(frozen=True)
class StartupReport:
    path: str
    recovered_from: str | None  # where a damaged database was moved, if it was
    interrupted_messages: int  # answers left streaming by a crash, now "interrupted"
    tabs: tuple[ChatSnapshot, ...]  # the open tabs, left to right
    current_tab: str | None


class StreamBuffer:
    """The text of each streaming answer, and which changed since the last write (no Qt)."""

    def __init__(self) -> None:
        self._chunks: dict[str, list[str]] = {}
        self._dirty: dict[str, None] = {}  # insertion-ordered set

    def begin(self, message_id: str, text: str = "") -> None:
        self._chunks[message_id] = [text] if text else []

    def append(self, message_id: str, chunk: str) -> None:
        self._chunks.setdefault(message_id, []).append(chunk)
        self._dirty[message_id] = None

    def replace(self, message_id: str, text: str) -> None:
        self._chunks[message_id] = [text]
        self._dirty[message_id] = None

    def text(self, message_id: str) -> str:
        chunks = self._chunks.get(message_id, [])
        if len(chunks) > 1:
            chunks[:] = ["".join(chunks)]  # join once per read, not once per token
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


class HistoryWorker(QObject):
    """Runs requests on the history thread; never touched from the GUI thread after moveToThread."""

    succeeded = Signal(int, object)  # request id, result
    failed = Signal(int, str)  # request id, message for a person

    def __init__(self, path: str | Path | None = None) -> None:
        super().__init__()
        self._path = path
        self._store: HistoryStore | None = None
        self._open_failure = ""

    @Slot(int, str, object, object)
    def run_request(self, request_id: int, name: str, args: tuple, kwargs: dict) -> None:
        try:
            result = self._dispatch(name, args, kwargs)
        except HistoryError as error:
            self.failed.emit(request_id, str(error))
        except Exception as error:  # a bug must not kill the thread that saves the chats
            log.exception("history request %s failed", name)
            self.failed.emit(request_id, f"The chat history failed unexpectedly ({name}: {error}).")
        else:
            self.succeeded.emit(request_id, result)

    def _dispatch(self, name: str, args: tuple, kwargs: dict) -> Any:
        if name == "open":
            return self._open()
        if name == "close":
            return self._close()
        if self._store is None:
            raise HistoryError(self._open_failure or "The chat history is not open.", "unavailable")
        if name not in STORE_METHODS:
            raise HistoryError(f"The chat history has no operation {name!r}.", "other")
        return getattr(self._store, name)(*args, **kwargs)

    def _open(self) -> StartupReport:
        interrupted = 0
        if self._store is None:
            try:
                self._store = HistoryStore.open(self._path)
            except HistoryError as error:
                self._open_failure = str(error)
                raise
            # Only at the first open: later, "streaming" answers are this session's.
            interrupted = self._store.mark_interrupted_on_startup()
            self._store.purge_deleted()  # undo of a delete lasts until the next start
            self._store.drop_empty_closed_chats()
        store = self._store
        tabs = tuple(store.load_chat(chat.id) for chat in store.open_tabs())
        aside = str(store.recovered_from) if store.recovered_from else None
        return StartupReport(str(store.path), aside, interrupted, tabs, store.current_tab())

    def _close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        # Quit from inside: every request queued before "close" has already run.
        thread = QThread.currentThread()
        thread.quit()


class HistoryClient(QObject):
    """The GUI thread's handle on the history: every method returns at once."""

    opened = Signal(object)  # StartupReport
    unavailable = Signal(str)  # the history could not be opened; nothing is saved
    error_occurred = Signal(str)  # a save failed; said once until something succeeds again

    _requested = Signal(int, str, object, object)  # to the worker, queued across threads

    def __init__(self, path: str | Path | None = None, flush_interval_ms: int = 1000, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread = QThread()
        self._thread.setObjectName("hearth-history")
        self._worker = HistoryWorker(path)
        self._worker.moveToThread(self._thread)
        self._requested.connect(self._worker.run_request)
        self._worker.succeeded.connect(self._on_succeeded)
        self._worker.failed.connect(self._on_failed)
        self._callbacks: dict[int, tuple[Callback | None, ErrorCallback | None]] = {}
        self._next_request = 0
        self._last_error = ""
        self._closed = False
        self.buffer = StreamBuffer()
        self.streaming_writes = 0  # how many coalesced streaming writes were sent
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(flush_interval_ms)
        self._flush_timer.timeout.connect(self.flush_streaming)

    # ------------------------------------------------------------ life

    def start(self) -> None:
        self._thread.start()
        application = QCoreApplication.instance()
        if application is not None:  # a safety net: a running QThread must not outlive the app
            application.aboutToQuit.connect(self.close)
        self.call("open", on_done=lambda report: self.opened.emit(report),
                  on_error=lambda message: self.unavailable.emit(message))
        self._flush_timer.start()

    def close(self, timeout_ms: int = 10000) -> bool:
        """Write what is buffered, close the database and join the thread; False if it hung."""
        if self._closed:
            return True
        self._flush_timer.stop()
        self.flush_streaming()
        self.call("close")
        self._closed = True
        if not self._thread.isRunning():
            return True
        finished = self._thread.wait(timeout_ms)
        if not finished:
            log.warning("the history thread did not finish within %d ms", timeout_ms)
        return finished

    def call(self, name: str, *args: Any, on_done: Callback | None = None,
             on_error: ErrorCallback | None = None, **kwargs: Any) -> int:
        """Queue `HistoryStore.<name>(*args, **kwargs)`; on_done(result) / on_error(message) run on this thread."""
        if self._closed:
            log.warning("history call %s after close was dropped", name)
            return -1
        self._next_request += 1
        self._callbacks[self._next_request] = (on_done, on_error)
        self._requested.emit(self._next_request, name, args, kwargs)
        return self._next_request

    @Slot(int, object)
    def _on_succeeded(self, request_id: int, result: object) -> None:
        self._last_error = ""
        on_done, _ = self._callbacks.pop(request_id, (None, None))
        if on_done is not None:
            on_done(result)

    @Slot(int, str)
    def _on_failed(self, request_id: int, message: str) -> None:
        _, on_error = self._callbacks.pop(request_id, (None, None))
        if on_error is not None:
            on_error(message)
        elif message != self._last_error:
            self._last_error = message
            self.error_occurred.emit(message)

    # ------------------------------------------------------------ chats and messages

    def create_chat(self, model: str = "", settings: dict[str, Any] | None = None, title: str = "",
                    on_done: Callback | None = None) -> str:
        chat_id = new_id()
        self.call("create_chat", title, model, settings, chat_id, on_done=on_done)
        return chat_id

    def add_message(self, chat_id: str, role: str, text: str, parent_id: str | None = None) -> str:
        message_id = new_id()
        self.call("add_message", chat_id, role, text, parent_id, "complete", message_id)
        return message_id

    def edit_message(self, message_id: str, text: str) -> str:
        """A new alternative of the message; the old one stays reachable."""
        new_message_id = new_id()
        self.call("edit_message", message_id, text, new_message_id)
        return new_message_id

    def __getattr__(self, name: str) -> Callable[..., int]:
        # Every other store method as a fire-and-forget or callback call:
        # history.rename_chat(chat_id, "Title"), history.search("word", on_done=show).
        if name in STORE_METHODS:
            return lambda *args, **kwargs: self.call(name, *args, **kwargs)
        raise AttributeError(name)

    # ------------------------------------------------------------ streaming

    def start_answer(self, chat_id: str, parent_id: str | None) -> str:
        """An empty assistant message in state "streaming" under `parent_id`; returns its id."""
        message_id = new_id()
        self.call("add_message", chat_id, "assistant", "", parent_id, "streaming", message_id)
        self.buffer.begin(message_id)
        return message_id

    def regenerate(self, message_id: str) -> str:
        """A new empty alternative of an answer, streaming; returns its id."""
        new_message_id = new_id()
        self.call("regenerate", message_id, new_message_id)
        self.buffer.begin(new_message_id)
        return new_message_id

    def resume_answer(self, message_id: str, text_so_far: str) -> None:
        """Continue an interrupted answer: later chunks are appended to `text_so_far`."""
        self.call("resume_streaming", message_id)
        self.buffer.begin(message_id, text_so_far)

    def append_streaming_text(self, message_id: str, chunk: str) -> None:
        self.buffer.append(message_id, chunk)

    def set_streaming_text(self, message_id: str, text: str) -> None:
        self.buffer.replace(message_id, text)

    @Slot()
    def flush_streaming(self) -> None:
        """Write each answer that grew since the last flush (the timer calls this once a second)."""
        for message_id, text in self.buffer.take_dirty():
            self.streaming_writes += 1
            self.call("update_streaming_text", message_id, text)

    def finish_answer(self, message_id: str, text: str | None = None, state: str = "complete", **numbers: Any) -> None:
        """The last write of an answer; text None: what was streamed. numbers: prompt_tokens,
        generated_tokens, timings, finish_reason (see HistoryStore.finish_message)."""
        streamed = self.buffer.end(message_id) if message_id in self.buffer else None
        self.call("finish_message", message_id, streamed if text is None else text, state, **numbers)

    def finish_turn(self, message_id: str, finished: Any) -> None:
        """finish_answer from the engine's TurnFinished (reason, text, stats)."""
        raw = finished.stats
        stats = dataclasses.asdict(raw) if dataclasses.is_dataclass(raw) and not isinstance(raw, type) else {}
        prompt_tokens, generated_tokens = stats.pop("prompt_tokens", None), stats.pop("generated_tokens", None)
        state = "interrupted" if finished.reason in _INTERRUPTED_REASONS else "complete"
        text = finished.text or None  # an error may come with no text: keep what streamed
        self.finish_answer(message_id, text, state, prompt_tokens=prompt_tokens, generated_tokens=generated_tokens,
                           timings=stats, finish_reason=finished.reason)

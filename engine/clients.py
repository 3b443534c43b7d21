"""Several clients, one engine: the window's tabs and the local API share one EngineLoop.

EngineHost owns the loop (start, restart, shutdown: the window's bridge, or
`hearth-serve`) and routes what it emits. A client attaches and gets an
EngineClient; every chat id it submits belongs to it, and the events that carry
that chat id go to it alone. Model and engine events (ModelLoading, ModelLoaded,
ModelLoadFailed, EngineStats, EngineError) go to every client. A chat id that
another client owns is refused on the caller's thread, so two clients can never
mix their chats up. A client with `one_turn_chats` (the API: a fresh id per
request) gives its chat id back when the turn finishes; a tab keeps its id for
all its turns until it closes it (and still hears how a turn running then ends).

`on_event` runs on the engine thread: it must only hand the event on (a Qt
signal's emit, `loop.call_soon_threadsafe`), never block. Taps see every command
and event with the engine's step count: tests and logs, not routing.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

from engine.loop import EngineLoop
from engine.protocol import (
    Cancel,
    CloseChat,
    Command,
    Embed,
    Embedded,
    EngineError,
    Event,
    ModelInfo,
    ModelLoaded,
    ModelLoadFailed,
    ModelLoading,
    ModelUnloaded,
    Submit,
    TurnFinished,
    TurnStats,
)

log = logging.getLogger(__name__)
STOPPED = "The engine was stopped before this answer was finished."
OnEvent = Callable[[Event], None]
Tap = Callable[[str, object, int], None]  # ("command" | "event", the message, engine steps so far)


class ChatIdTaken(ValueError):
    """A client named a chat that belongs to another client."""


class EngineClient:
    """One client's handle on the shared engine: send commands, receive its own events."""

    def __init__(self, host: EngineHost, name: str, on_event: OnEvent, one_turn_chats: bool) -> None:
        self.host, self.name, self.one_turn_chats = host, name, one_turn_chats
        self._on_event = on_event
        self.attached = True

    def send(self, command: Command) -> None:
        """Submit, Cancel, CloseChat or LoadModel; a Submit makes its chat id this client's."""
        self.host._send_for(self, command)

    def detach(self) -> None:
        """Close every chat this client owns and stop receiving events."""
        self.host._detach(self)

    def deliver(self, event: Event) -> None:
        try:
            self._on_event(event)
        except Exception:  # one client's bug must not stop the engine for the others
            log.exception("client %s failed to take %r", self.name, event)


class EngineHost:
    """The one EngineLoop of a process and the clients attached to it; survives restarts of the loop."""

    def __init__(self, stats_interval_s: float = 0.5) -> None:
        self._stats_interval_s = stats_interval_s
        self._lock = threading.Lock()
        self._loop: EngineLoop | None = None
        self._clients: list[EngineClient] = []
        self._owners: dict[str, EngineClient] = {}
        self._turns: dict[str, int] = {}  # chat -> turns submitted and not yet finished
        self._closing: set[str] = set()  # closed chats whose last turn has yet to report its end
        self._taps: list[Tap] = []
        self.models: dict[str, ModelInfo] = {}  # path -> the loaded models as the engine said, in load order
        self.loading_paths: set[str] = set()  # models being loaded

    # ------------------------------------------------------------ the loop's life (its owner only)

    def start(self) -> None:
        """Start an engine thread unless one runs (idle until a model is loaded)."""
        with self._lock:
            if self._loop is not None and self._loop.running:
                return
            self._loop = EngineLoop(self._emit, stats_interval_s=self._stats_interval_s)
            self._forget_turns()  # a fresh engine knows no turns
            self.models.clear()
            self.loading_paths.clear()
        self._loop.start()

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop the engine thread and wait for it; safe to call twice.

        Turns of one-turn clients still running end with TurnFinished(cancelled): an API
        request waiting on one is answered, not left hanging (the window may stop the
        engine to free memory and start it again later). The window, which stopped the
        engine itself, hears nothing more, as before."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is None:
            return
        loop.shutdown(timeout)
        with self._lock:
            unfinished = [(chat, self._owners[chat]) for chat in self._turns
                          if chat in self._owners and self._owners[chat].one_turn_chats]
            self._forget_turns()
        for chat, owner in unfinished:
            owner.deliver(TurnFinished(chat, "cancelled", TurnStats(0, 0, 0, 0.0, 0.0, 0.0), "", STOPPED))

    def restart(self) -> None:
        self.shutdown()
        self.start()

    def cancel_load(self) -> None:
        if self._loop is not None:
            self._loop.cancel_load()

    @property
    def model_info(self) -> ModelInfo | None:
        """The model loaded last: the one that answers a Submit naming none."""
        with self._lock:
            return next(reversed(self.models.values()), None)

    @property
    def loading(self) -> bool:
        return bool(self.loading_paths)

    def loaded(self, path: str) -> ModelInfo | None:
        with self._lock:
            return self.models.get(path)

    @property
    def running(self) -> bool:
        loop = self._loop
        return loop is not None and loop.running

    @property
    def steps(self) -> int:
        """Engine steps run so far by the current loop."""
        loop = self._loop
        return loop.steps if loop is not None else 0

    # ------------------------------------------------------------ clients

    def attach(self, name: str, on_event: OnEvent, one_turn_chats: bool = False) -> EngineClient:
        client = EngineClient(self, name, on_event, one_turn_chats)
        with self._lock:
            self._clients.append(client)
        return client

    def add_tap(self, tap: Tap) -> Callable[[], None]:
        """See every command and event; returns the function that removes the tap."""
        with self._lock:
            self._taps.append(tap)
        return lambda: self._remove_tap(tap)

    def _remove_tap(self, tap: Tap) -> None:
        with self._lock:
            if tap in self._taps:
                self._taps.remove(tap)

    def owner_of(self, chat_id: str) -> str | None:
        """The name of the client a chat belongs to, if any."""
        with self._lock:
            owner = self._owners.get(chat_id)
        return owner.name if owner is not None else None

    def _send_for(self, client: EngineClient, command: Command) -> None:
        if not client.attached:
            raise RuntimeError(f"client {client.name} is detached")
        with self._lock:
            if isinstance(command, (Submit, Embed, Cancel, CloseChat)):
                self._claim(client, command)
            loop = self._loop
            taps = list(self._taps)
        if loop is None:
            raise RuntimeError("the engine is not started")
        for tap in taps:
            tap("command", command, loop.steps)
        loop.send(command)

    def _claim(self, client: EngineClient, command: Submit | Embed | Cancel | CloseChat) -> None:
        owner = self._owners.get(command.chat_id)
        if owner is not None and owner is not client:
            raise ChatIdTaken(f"chat {command.chat_id!r} belongs to client {owner.name}, not {client.name}")
        chat = command.chat_id
        if isinstance(command, (Submit, Embed)):  # an Embed is a turn that answers with Embedded
            self._owners[chat] = client
            self._turns[chat] = self._turns.get(chat, 0) + 1
            self._closing.discard(chat)
        elif isinstance(command, CloseChat):
            if self._turns.get(chat):
                self._closing.add(chat)  # given back when that turn's TurnFinished has been routed
            else:
                self._owners.pop(chat, None)

    def _detach(self, client: EngineClient) -> None:
        with self._lock:
            chats = [chat for chat, owner in self._owners.items() if owner is client]
            loop = self._loop
        for chat in chats:
            if loop is not None:
                self._send_for(client, CloseChat(chat))
        with self._lock:
            client.attached = False
            if client in self._clients:
                self._clients.remove(client)

    # ------------------------------------------------------------ the engine thread

    def _emit(self, event: Event) -> None:
        chat_id = getattr(event, "chat_id", None)
        with self._lock:
            self._track_model(event)
            if chat_id is None:
                targets = list(self._clients)
            else:
                owner = self._owners.get(chat_id)
                targets = [owner] if owner is not None and owner.attached else []
                if owner is not None and isinstance(event, (TurnFinished, Embedded)):
                    self._turn_finished(owner, chat_id)
            taps = list(self._taps)
        steps = self.steps
        for tap in taps:
            tap("event", event, steps)
        for client in targets:
            client.deliver(event)

    def _turn_finished(self, owner: EngineClient, chat_id: str) -> None:
        left = self._turns.get(chat_id, 1) - 1
        if left > 0:
            self._turns[chat_id] = left
            return
        self._turns.pop(chat_id, None)
        if owner.one_turn_chats or chat_id in self._closing:
            self._closing.discard(chat_id)
            del self._owners[chat_id]

    def _forget_turns(self) -> None:
        self._owners.clear()
        self._turns.clear()
        self._closing.clear()

    def _track_model(self, event: Event) -> None:
        """What a client attaching later needs to know: which models answer, which are being loaded."""
        if isinstance(event, ModelLoading):
            self.loading_paths.add(event.path)
        elif isinstance(event, ModelLoaded):
            self.models.pop(event.info.path, None)
            self.models[event.info.path] = event.info
            self.loading_paths.discard(event.info.path)
        elif isinstance(event, ModelLoadFailed):
            self.loading_paths.discard(event.path)
            if not event.previous_kept:
                self.models.clear()
        elif isinstance(event, ModelUnloaded):
            self.models.pop(event.path, None)
        elif isinstance(event, EngineError):
            self.models.clear()
            self.loading_paths.clear()
            self._forget_turns()


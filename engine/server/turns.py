"""The API's turns in the engine: engine events to each request's asyncio.Queue, and back.

The server is one client of the EngineHost. Its events arrive on the engine
thread and cross to the server's asyncio loop with `call_soon_threadsafe`; there
they go to the queue of the request that owns the chat id. Every request gets a
fresh chat id (`api-` + 32 hex digits; the window's tabs use bare hex), so it
never meets a tab's chat, and its cache is found again by the slot table's
prefix match. A request that goes away cancels its turn at once: the engine
ends it before its next step.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from dataclasses import replace
from typing import Any, AsyncIterator, Callable, Protocol

from engine.clients import EngineClient, EngineHost
from engine.protocol import (
    Cancel, Embed, Embedded, EngineError, Event, Logprobs, ModelConfig, ModelInfo, ModelUnloaded, ReasoningText, Submit,
    Token, TokenLogprob, ToolCallArguments, ToolCallStarted, TurnFinished, TurnQueued, TurnStarted,
)
from engine.server.errors import ApiError
from engine.server.loads import ModelLoads
from engine.server.options import API_CHAT_PREFIX

log = logging.getLogger(__name__)
RETRY_AFTER_S = 2
SHUTDOWN_NOTE = "The server is shutting down: the answer was cut here."
PART_EVENTS = (Token, ReasoningText, ToolCallStarted, ToolCallArguments, Logprobs)  # what an answer streams


def new_chat_id() -> str:
    return API_CHAT_PREFIX + uuid.uuid4().hex


class AnswerTurn(Protocol):
    """What the ways of answering read: one Turn, or the rounds of a request whose model calls the server's own
    tools (engine/server/tool_loop.py)."""

    chat_id: str
    prompt_tokens: int
    cached_tokens: int
    finished: TurnFinished | None
    logprobs: list[TokenLogprob]

    async def started(self) -> None: ...

    def events(self) -> AsyncIterator[Any]: ...

    async def answer(self) -> TurnFinished: ...

    def cancel(self, note: str = "") -> None: ...


class Turn:
    """One request's turn; its events arrive in `queue` on the server's loop."""

    def __init__(self, submit: Submit, desk: TurnDesk) -> None:
        self.submit, self.chat_id = submit, submit.chat_id
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        self.prompt_tokens = 0
        self.cached_tokens = 0  # of the prompt, found in the slot's KV cache (known once the turn started)
        self.finished: TurnFinished | None = None
        self.logprobs: list[TokenLogprob] = []  # every Logprobs event's entries, in order
        self.note = ""  # set when the server itself ends the turn
        self._desk = desk
        self._early: list[Event] = []  # read by started() before the turn's start, not yet by events()

    async def accepted(self) -> None:
        """Wait until the engine took the turn (it fits and waits for a slot); raise ApiError if not."""
        while True:
            event = await self.queue.get()
            if isinstance(event, TurnQueued):
                self.prompt_tokens = event.prompt_tokens
                return
            if isinstance(event, TurnFinished):
                self.finished = event
                raise self._desk.refusal(event)
            if isinstance(event, EngineError):
                raise ApiError(500, f"The engine failed: {event.message.splitlines()[0]}")

    async def started(self) -> None:
        """Wait until the turn has a slot, or ended before it got one (events() then tells how)."""
        while True:
            event = await self.queue.get()
            if isinstance(event, TurnStarted):
                self.cached_tokens = event.reused_tokens
                return
            self._early.append(event)  # kept for events(), in order
            if isinstance(event, (TurnFinished, EngineError)):
                return

    async def events(self) -> AsyncIterator[Event]:
        """The answer's parts as they stream (text, thinking, tool calls, logprobs); `finished` is set at the end."""
        while self.finished is None:
            event = self._early.pop(0) if self._early else await self.queue.get()
            if isinstance(event, PART_EVENTS):
                if isinstance(event, Logprobs):
                    self.logprobs.extend(event.entries)
                yield event
            elif isinstance(event, TurnFinished):
                self.finished = replace(event, message=self.note) if self.note else event
            elif isinstance(event, EngineError):
                raise ApiError(500, f"The engine failed while answering: {event.message.splitlines()[0]}")

    async def answer(self) -> TurnFinished:
        async for _ in self.events():
            pass
        assert self.finished is not None
        return self.finished

    def cancel(self, note: str = "") -> None:
        """End the turn early (the client went away, or the server stops); safe to call twice."""
        if self.finished is None:
            self.note = note or self.note
            self._desk.cancel(self)


class TurnDesk:
    """Every API turn in flight, the server's engine client, and the limit on how many may wait."""

    def __init__(self, host: EngineHost, max_waiting: int, on_count: Callable[[int], None] | None = None) -> None:
        self.host = host
        self.max_waiting = max_waiting
        self._on_count = on_count
        self._turns: dict[str, Turn] = {}
        self._embeddings: dict[str, asyncio.Future[Event]] = {}  # Embed sent, Embedded awaited
        self._aio: asyncio.AbstractEventLoop | None = None
        self._client: EngineClient | None = None
        self._pending: list[Event] = []  # from the engine thread, not yet on the loop
        self._pending_lock = threading.Lock()
        self._wake_sent = False
        self.draining = False
        self.loads = ModelLoads()

    # ------------------------------------------------------------ life (the server's thread)

    def open_desk(self, aio: asyncio.AbstractEventLoop) -> None:
        self._aio = aio
        self._client = self.host.attach("api", self._from_engine, one_turn_chats=True)

    def close_desk(self) -> None:
        if self._client is not None:
            self._client.detach()
            self._client = None

    @property
    def in_flight(self) -> int:
        return len(self._turns) + len(self._embeddings)

    def limit(self) -> int:
        slots = self.host.model_info.slots if self.host.model_info else 1
        return slots + self.max_waiting

    # ------------------------------------------------------------ turns (the server's loop)

    def _check_running(self) -> EngineClient:
        if self.draining:
            raise ApiError(503, "The server is shutting down.", code="shutting_down", retry_after_s=RETRY_AFTER_S)
        if self._client is None or not self.host.running:
            raise ApiError(503, "The engine is not running.", code="engine_stopped", retry_after_s=RETRY_AFTER_S)
        return self._client

    def _check_open(self) -> EngineClient:
        client = self._check_running()
        if self.in_flight >= self.limit():
            raise ApiError(503, f"The server is busy: {self.in_flight} requests are being answered or wait. "
                           "Try again shortly.", code="queue_full", retry_after_s=RETRY_AFTER_S)
        return client

    async def load_model(self, config: ModelConfig, keep_alive_s: float | None) -> ModelInfo:
        """Load a model and wait until it is in (ApiError with the engine's reason if it cannot be)."""
        return await self.loads.load(self._check_running().send, config, keep_alive_s)

    async def unload_model(self, path: str) -> ModelUnloaded:
        return await self.loads.unload(self._check_running().send, path)

    async def embed(self, command: Embed) -> Embedded:
        """The texts' vectors from the engine; ApiError (400) when it cannot make them."""
        client = self._check_open()
        assert self._aio is not None
        future: asyncio.Future[Event] = self._aio.create_future()
        self._embeddings[command.chat_id] = future
        self._count_changed()
        try:
            client.send(command)
            answer = await future
        finally:
            self._embeddings.pop(command.chat_id, None)
            self._count_changed()
        if isinstance(answer, EngineError):
            raise ApiError(500, f"The engine failed: {answer.message.splitlines()[0]}")
        if not isinstance(answer, Embedded):  # the engine stopped before it answered
            raise ApiError(503, "The engine stopped before it answered.", retry_after_s=RETRY_AFTER_S)
        if answer.message:
            raise ApiError(400, answer.message, param="input", code="embeddings_unavailable")
        return answer

    async def open(self, submit: Submit) -> Turn:
        """Send the turn to the engine and wait until it is taken; ApiError if it is not."""
        self._check_open()
        turn = Turn(submit, self)
        self._turns[turn.chat_id] = turn
        self._count_changed()
        try:
            assert self._client is not None
            self._client.send(submit)
            await turn.accepted()
        except BaseException:
            self.close(turn)
            raise
        return turn

    def close(self, turn: AnswerTurn) -> None:
        """The request is over: if its turn still runs (the client went away), end it now."""
        turn.cancel()
        if self._turns.pop(turn.chat_id, None) is not None:
            self._count_changed()

    def cancel(self, turn: Turn) -> None:
        if self._client is not None and self.host.running:
            self._client.send(Cancel(turn.chat_id))

    def cancel_all(self, note: str = SHUTDOWN_NOTE) -> None:
        self.draining = True
        for turn in list(self._turns.values()):
            turn.cancel(note)

    def refusal(self, finished: TurnFinished) -> ApiError:
        """Why the engine did not take a turn, as the HTTP error to answer with."""
        info = self.host.model_info
        if info is None:
            return ApiError(503, "No model is loaded yet.", code="model_not_loaded", retry_after_s=RETRY_AFTER_S)
        if finished.stats.prompt_tokens >= info.context_length:
            return ApiError(400, f"The prompt is {finished.stats.prompt_tokens} tokens long; this model's context "
                            f"holds {info.context_length} tokens per request.", param="messages",
                            code="context_length_exceeded")
        return ApiError(400, finished.message or "The engine could not take this request.")

    def _count_changed(self) -> None:
        if self._on_count is not None:
            self._on_count(self.in_flight)

    # ------------------------------------------------------------ events

    def _from_engine(self, event: Event) -> None:
        """On the engine thread: hand the event over to the server's loop, nothing more.

        One wake-up of the loop carries every event of a step (a token for each request),
        not one wake-up per token."""
        aio = self._aio
        with self._pending_lock:
            self._pending.append(event)
            if self._wake_sent or aio is None or aio.is_closed():
                return
            self._wake_sent = True
        aio.call_soon_threadsafe(self._deliver_pending)

    def _deliver_pending(self) -> None:
        with self._pending_lock:
            events, self._pending = self._pending, []
            self._wake_sent = False
        for event in events:
            self._dispatch(event)

    def _dispatch(self, event: Event) -> None:
        chat_id = getattr(event, "chat_id", None)
        if chat_id is None:
            self.loads.on_event(event)
        waiting = self._embeddings.get(chat_id or "")
        if waiting is not None and isinstance(event, (Embedded, TurnFinished)) and not waiting.done():
            waiting.set_result(event)
        elif isinstance(event, EngineError):
            for future in self._embeddings.values():
                if not future.done():
                    future.set_result(event)
        if chat_id is not None:
            turn = self._turns.get(chat_id)
            if turn is not None:
                turn.queue.put_nowait(event)
        elif isinstance(event, EngineError):
            for turn in self._turns.values():
                turn.queue.put_nowait(event)

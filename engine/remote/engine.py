"""RemoteEngine: where the scheduler and runner stand, an OpenAI-compatible server answers every chat.

The engine loop calls it as it calls the scheduler (submit, cancel, close,
cancel_all, has_work, step) and asks it for EngineStats. Streams run as tasks
on one asyncio loop in a thread of its own (any number at once; the server
batches them); each task hands its deltas to a queue that `step` drains on the
engine thread, so every protocol event is still emitted there, in order. Stop
cancels the task, which closes the HTTP stream (the server sees the client go
and stops); the turn ends at once with the text so far. A delta from a turn
that has already ended is dropped, so a late piece never reaches the next turn.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from itertools import count

import httpx2

from engine.protocol import (
    Event, FinishReason, ModelConfig, ModelInfo, ReasoningText, Submit, Token, TurnFinished, TurnStarted,
    TurnStats,
)
from engine.remote.errors import base_url
from engine.remote.probe import ServerCheck, check_server
from engine.remote.stream import Answering, Connection, Delta, Ended, Piece, Usage, stream_turn

STEP_WAIT_S = 0.02  # the longest a command waits while streams run: a Cancel lands within this


class RemoteUnavailable(Exception):
    """Connecting failed; the message says why for a person."""


@dataclass
class RemoteTurn:
    chat_id: str
    number: int
    submitted_at: float
    future: concurrent.futures.Future[None] | None = None
    first_token_at: float | None = None
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    pieces: int = 0
    usage: Usage | None = None

    def stats(self, now: float) -> TurnStats:
        generated = self.usage.completion_tokens if self.usage else self.pieces
        first = self.first_token_at
        decode_s = now - first if first is not None else 0.0
        return TurnStats(self.usage.prompt_tokens if self.usage else 0, 0, generated,
                         (first - self.submitted_at) if first is not None else 0.0,
                         (generated - 1) / decode_s if generated > 1 and decode_s > 0 else 0.0, now - self.submitted_at)


def model_info(config: ModelConfig, check: ServerCheck, model: str) -> ModelInfo:
    listed = next((m for m in check.models if m.id == model), None)
    context = listed.context_length if listed else 0
    # pictures go to the server unless its model list says this model takes none; where the list says nothing
    # (vLLM, llama-server), the server itself answers a picture it cannot read with an error the chat shows
    vision = ("vision",) if listed is None or listed.sees is not False else ()
    return ModelInfo(name=model, path=base_url(config.path), backend="remote", device=f"remote: {base_url(config.path)}",
                     quantization="", attention="", context_length=context, slots=config.slots, model_bytes=0,
                     kv_cache_bytes=0, gpu_offload=False, notes=(f"Answered by {base_url(config.path)}.",),
                     capabilities=vision)


class RemoteEngine:
    def __init__(self, config: ModelConfig, check: ServerCheck, model: str) -> None:
        self.info = model_info(config, check, model)
        self.connection = Connection(base_url(config.path), model, config.api_key, config.connect_timeout_s,
                                     config.first_token_timeout_s, config.stall_timeout_s)
        self.latency_ms = check.latency_ms
        self.turns: dict[str, RemoteTurn] = {}
        self.sampled_log: deque[tuple[float, str]] = deque()  # (time, chat) per piece, as the scheduler's
        self._deltas: queue.Queue[tuple[int, Delta]] = queue.Queue()
        self._numbers = count(1)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hearth-remote", daemon=True)
        self._thread.start()
        self._client = asyncio.run_coroutine_threadsafe(self._make_client(), self._loop).result()

    @classmethod
    def connect(cls, config: ModelConfig) -> RemoteEngine:
        """Ask the server for its models; the configured one (or its first) answers from now on."""
        check = check_server(config.path, config.api_key, config.connect_timeout_s)
        if not check.ok:
            raise RemoteUnavailable(check.message)
        model = config.remote_model or (check.model_ids[0] if check.model_ids else "")
        if not model:
            raise RemoteUnavailable(f"{base_url(config.path)} lists no models to chat with.")
        if check.model_ids and model not in check.model_ids:
            raise RemoteUnavailable(f"{base_url(config.path)} does not serve {model!r}; it lists "
                                    f"{', '.join(check.model_ids)}. Pick one in Settings > Backend.")
        return cls(config, check, model)

    async def _make_client(self) -> httpx2.AsyncClient:
        # No read timeout of httpx's own: stream.py times the first token and stalls separately.
        timeout = httpx2.Timeout(connect=self.connection.connect_timeout_s, read=None, write=60.0, pool=None)
        return httpx2.AsyncClient(timeout=timeout, limits=httpx2.Limits(max_connections=None,
                                                                          max_keepalive_connections=64))

    # ------------------------------------------------------------ commands (engine thread)

    def submit(self, command: Submit) -> list[Event]:
        events = self.cancel(command.chat_id)
        turn = RemoteTurn(command.chat_id, next(self._numbers), time.perf_counter())
        self.turns[command.chat_id] = turn

        def deliver(delta: Delta, number: int = turn.number) -> None:
            self._deltas.put((number, delta))

        turn.future = asyncio.run_coroutine_threadsafe(
            stream_turn(self._client, self.connection, command, deliver), self._loop)
        return events + [TurnStarted(command.chat_id, 0, 0)]

    def cancel(self, chat_id: str) -> list[Event]:
        turn = self.turns.get(chat_id)
        if turn is None:
            return []
        return self._finish(turn, "cancelled")

    def close(self, chat_id: str) -> list[Event]:
        return self.cancel(chat_id)

    def cancel_all(self, message: str) -> list[Event]:
        return [event for chat_id in list(self.turns) for event in
                (self._finish(self.turns[chat_id], "cancelled", message))]

    def has_work(self) -> bool:
        return bool(self.turns)

    def slots_busy(self) -> int:
        return len(self.turns)

    # ------------------------------------------------------------ the step

    def step(self, wait_s: float = STEP_WAIT_S) -> list[Event]:
        """What the streams delivered since the last step; waits a little for the first delta (not at all
        with `wait_s` 0: other models have steps to run)."""
        events: list[Event] = []
        try:
            item = self._deltas.get(timeout=wait_s) if wait_s > 0 else self._deltas.get_nowait()
        except queue.Empty:
            return events
        while True:
            events += self._apply(*item)
            try:
                item = self._deltas.get_nowait()
            except queue.Empty:
                return events

    def _apply(self, number: int, delta: Delta) -> list[Event]:
        turn = next((t for t in self.turns.values() if t.number == number), None)
        if turn is None:
            return []  # that turn was stopped or replaced: its stragglers are dropped
        now = time.perf_counter()
        if isinstance(delta, Answering):
            self.latency_ms = delta.latency_s * 1000
        elif isinstance(delta, Usage):
            turn.usage = delta
        elif isinstance(delta, Piece):
            turn.first_token_at = turn.first_token_at or now
            turn.pieces += 1
            self.sampled_log.append((now, turn.chat_id))
            (turn.reasoning if delta.reasoning else turn.text).append(delta.text)
            return [ReasoningText(turn.chat_id, delta.text) if delta.reasoning else Token(turn.chat_id, delta.text)]
        elif isinstance(delta, Ended):
            return self._finish(turn, delta.reason, delta.message)
        return []

    def _finish(self, turn: RemoteTurn, reason: FinishReason, message: str = "") -> list[Event]:
        del self.turns[turn.chat_id]
        if turn.future is not None and not turn.future.done():
            turn.future.cancel()  # cancels the task on its loop: the stream is closed there
        return [TurnFinished(turn.chat_id, reason, turn.stats(time.perf_counter()), "".join(turn.text), message,
                             "".join(turn.reasoning))]

    # ------------------------------------------------------------ the end

    def shutdown(self) -> None:
        """Stop every stream and the loop; the turns' ends are not reported (the engine is going)."""
        self.turns.clear()
        try:
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(timeout=10)
        except Exception:  # noqa: BLE001 - closing is best effort; the loop goes anyway
            pass
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()

    async def _close(self) -> None:
        tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._client.aclose()

"""A client that goes away frees its slot within one engine step: while its prompt is computed, and while it decodes.

The assertions are on the engine's own step count (the host's tap records it
with every command and event): the Cancel is sent at most one step after the
socket closed, the turn ends in the step the Cancel lands in, and the slot is
free again. Nothing here sleeps; waits end on the engine's state.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import uuid
from typing import Callable

from engine.clients import EngineHost
from engine.protocol import Cancel, EngineStats, Submit, Token, TurnFinished, TurnStarted
from engine.server import ApiServer
from tests.engine.server.conftest import BATCH, Tap


def wait_until(predicate: Callable[[], bool], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def long_prompt(words: int = 300) -> str:
    marker = uuid.uuid4().hex  # a start no slot holds: the whole prompt must be computed
    return f"{marker} " + " ".join(f"item{n % 97}" for n in range(words))


def open_request(server: ApiServer, path: str, body: dict[str, object]) -> http.client.HTTPConnection:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return connection


def submitted(tap: Tap, text: str) -> str:
    """The chat id the server gave the request whose prompt or last message is `text`."""
    def matches(kind: str, message: object) -> bool:
        return kind == "command" and isinstance(message, Submit) and (
            message.prompt == text or bool(message.messages) and message.messages[-1].content == text)
    return tap.wait(matches)[1].chat_id  # type: ignore[attr-defined]


def hang_up(connection: http.client.HTTPConnection) -> None:
    assert connection.sock is not None
    connection.sock.shutdown(socket.SHUT_RDWR)
    connection.close()


def step_of(tap: Tap, kind: type, chat_id: str, what: str) -> tuple[object, int]:
    _, message, steps, _ = tap.wait(lambda k, m: k == what and isinstance(m, kind) and m.chat_id == chat_id)
    return message, steps


def stats_after(tap: Tap, message: object) -> EngineStats:
    """The first EngineStats the engine sent after `message` (it sends one when it goes idle)."""
    with tap.condition:
        index = next(i for i, record in enumerate(tap.records) if record[1] is message)
    stats = tap.wait(lambda k, m: k == "event" and isinstance(m, EngineStats), after=index + 1)[1]
    assert isinstance(stats, EngineStats)
    return stats


def assert_freed_within_one_step(engine: EngineHost, server: ApiServer, tap: Tap, chat_id: str,
                                 closed_at_step: int) -> TurnFinished:
    _, cancelled_at = step_of(tap, Cancel, chat_id, "command")
    finished, finished_at = step_of(tap, TurnFinished, chat_id, "event")
    assert isinstance(finished, TurnFinished) and finished.reason == "cancelled"
    assert cancelled_at - closed_at_step <= 1, (closed_at_step, cancelled_at)  # the server noticed at once
    assert finished_at - cancelled_at <= 1, (cancelled_at, finished_at)  # the engine ended it before its next step
    wait_until(lambda: server.in_flight == 0)
    assert stats_after(tap, finished).slots_busy == 0  # the engine's own count, right after the end
    return finished


def test_hanging_up_while_the_prompt_is_computed(engine: EngineHost, server: ApiServer, tap: Tap) -> None:
    prompt = long_prompt()
    connection = open_request(server, "/v1/completions", {"prompt": prompt, "max_tokens": 8, "stream": True})
    response = connection.getresponse()
    assert response.status == 200  # the engine took it: the prompt fits
    chat_id = submitted(tap, prompt)
    started, started_at = step_of(tap, TurnStarted, chat_id, "event")
    assert isinstance(started, TurnStarted) and started.prompt_tokens > 10 * BATCH  # many chunks to compute
    wait_until(lambda: engine.steps >= started_at + 2)  # two chunks in
    closed_at = engine.steps
    hang_up(connection)
    finished = assert_freed_within_one_step(engine, server, tap, chat_id, closed_at)
    assert finished.stats.generated_tokens == 0
    chunks_needed = -(-started.prompt_tokens // BATCH)
    _, finished_at = step_of(tap, TurnFinished, chat_id, "event")
    assert finished_at - started_at < chunks_needed  # it never got to the end of its prompt


def test_hanging_up_while_decoding(engine: EngineHost, server: ApiServer, tap: Tap) -> None:
    question = f"Tell a very long story. ({uuid.uuid4().hex})"
    body = {"messages": [{"role": "user", "content": question}], "max_tokens": 500, "ignore_eos": True,
            "temperature": 0, "stream": True}
    connection = open_request(server, "/v1/chat/completions", body)
    assert connection.getresponse().status == 200
    chat_id = submitted(tap, question)
    wait_until(lambda: sum(1 for e in tap.events(Token) if e.chat_id == chat_id) >= 8)  # type: ignore[attr-defined]
    closed_at = engine.steps
    hang_up(connection)
    finished = assert_freed_within_one_step(engine, server, tap, chat_id, closed_at)
    assert 8 <= finished.stats.generated_tokens < 500


def test_hanging_up_on_a_non_streaming_request(engine: EngineHost, server: ApiServer, tap: Tap) -> None:
    question = f"Tell a very long story. ({uuid.uuid4().hex})"
    body = {"messages": [{"role": "user", "content": question}], "max_tokens": 500, "ignore_eos": True}
    connection = open_request(server, "/v1/chat/completions", body)
    chat_id = submitted(tap, question)
    wait_until(lambda: sum(1 for e in tap.events(Token) if e.chat_id == chat_id) >= 4)  # type: ignore[attr-defined]
    closed_at = engine.steps
    hang_up(connection)
    finished = assert_freed_within_one_step(engine, server, tap, chat_id, closed_at)
    assert finished.stats.generated_tokens < 500

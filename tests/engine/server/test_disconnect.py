"""A client that goes away frees its slot within a step of the server's Cancel: while its prompt is computed, and while it decodes.

The engine is held still (the tap stops its thread inside an event of the turn) from before the
socket closes until the server's Cancel has come, so nothing races: the server notices a hang-up
on its own, the turn ends in the step the Cancel lands in, and the slot is free again. The
assertions are on the engine's own step count (the host's tap records it with every command and
event) and on token counts, never on how quickly one thread beat another.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import uuid
from typing import Callable, Iterator

import pytest

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


class ChatOf:
    """The chat id the server gave the request whose prompt or last message is `text`: its Submit passes
    the tap (on the server's thread) before the engine gets it, so every event of the turn finds it."""

    def __init__(self, tap: Tap, text: str) -> None:
        self.tap, self.text, self.found = tap, text, ""

    def __call__(self) -> str:
        if not self.found:
            with self.tap.condition:
                self.found = next((m.chat_id for k, m, _, _ in self.tap.records if k == "command" and self._is(m)), "")
        return self.found

    def _is(self, message: object) -> bool:
        return isinstance(message, Submit) and (
            message.prompt == self.text or bool(message.messages) and message.messages[-1].content == self.text)

    def cancelled(self, kind: str, message: object) -> bool:
        return kind == "command" and isinstance(message, Cancel) and message.chat_id == self()


@pytest.fixture
def released(tap: Tap) -> Iterator[Tap]:
    """The tap, with any hold a test left armed dropped afterwards."""
    yield tap
    tap.release_all()


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


def hang_up_while_held(server: ApiServer, tap: Tap, connection: http.client.HTTPConnection,
                       chat: ChatOf) -> TurnFinished:
    """The engine stands in the held step; the socket closes; the server's Cancel ends the turn before another step."""
    _, held_at = tap.wait_held()
    hang_up(connection)
    _, cancelled_at = step_of(tap, Cancel, chat(), "command")
    finished, finished_at = step_of(tap, TurnFinished, chat(), "event")
    assert isinstance(finished, TurnFinished) and finished.reason == "cancelled"
    assert cancelled_at == held_at, (held_at, cancelled_at)  # the server noticed on its own, the engine waiting
    # the engine applies commands before every step: the Cancel, put in its inbox just after the tap saw
    # it, lands before the next step or the one after
    assert finished_at - cancelled_at <= 1, (cancelled_at, finished_at)
    wait_until(lambda: server.in_flight == 0)
    assert stats_after(tap, finished).slots_busy == 0  # the engine's own count, right after the end
    return finished


def test_hanging_up_while_the_prompt_is_computed(engine: EngineHost, server: ApiServer, released: Tap) -> None:
    prompt = long_prompt()
    chat = ChatOf(released, prompt)
    # TurnStarted comes with the step that computed the prompt's first chunk
    released.hold(at=lambda kind, m: isinstance(m, TurnStarted) and m.chat_id == chat(), until=chat.cancelled)
    connection = open_request(server, "/v1/completions", {"prompt": prompt, "max_tokens": 8, "stream": True})
    assert connection.getresponse().status == 200  # the engine took it: the prompt fits
    started, _ = released.wait_held()
    assert isinstance(started, TurnStarted) and started.prompt_tokens > 10 * BATCH  # many chunks to compute
    finished = hang_up_while_held(server, released, connection, chat)
    assert finished.stats.generated_tokens == 0  # it never got to the end of its prompt


class NthToken:
    """Matches the chat's `count`-th Token event."""

    def __init__(self, chat: ChatOf, count: int) -> None:
        self.chat, self.count, self.seen = chat, count, 0

    def __call__(self, kind: str, message: object) -> bool:
        if isinstance(message, Token) and message.chat_id == self.chat():
            self.seen += 1
            return self.seen == self.count
        return False


def test_hanging_up_while_decoding(engine: EngineHost, server: ApiServer, released: Tap) -> None:
    question = f"Tell a very long story. ({uuid.uuid4().hex})"
    chat = ChatOf(released, question)
    released.hold(at=NthToken(chat, 8), until=chat.cancelled)
    body = {"messages": [{"role": "user", "content": question}], "max_tokens": 500, "ignore_eos": True,
            "temperature": 0, "stream": True}
    connection = open_request(server, "/v1/chat/completions", body)
    assert connection.getresponse().status == 200
    finished = hang_up_while_held(server, released, connection, chat)
    assert 8 <= finished.stats.generated_tokens < 500  # a step's accepted drafts may follow the eighth token


def test_hanging_up_on_a_non_streaming_request(engine: EngineHost, server: ApiServer, released: Tap) -> None:
    question = f"Tell a very long story. ({uuid.uuid4().hex})"
    chat = ChatOf(released, question)
    released.hold(at=NthToken(chat, 4), until=chat.cancelled)
    body = {"messages": [{"role": "user", "content": question}], "max_tokens": 500, "ignore_eos": True}
    connection = open_request(server, "/v1/chat/completions", body)
    finished = hang_up_while_held(server, released, connection, chat)
    assert 4 <= finished.stats.generated_tokens < 500

"""A real EngineHost on the default model with the real API server on a free 127.0.0.1 port, and the real clients."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator

import pytest

from engine.clients import EngineHost
from engine.protocol import Event, LoadModel, ModelConfig, ModelLoaded, ModelLoadFailed, TurnFinished
from engine.server import ApiServer, ServerOptions

CONTEXT = 1024
BATCH = 64  # small prompt chunks: a long prompt takes many steps, so a disconnect can land in the middle


Match = Callable[[str, object], bool]  # (kind "command" | "event", the message)
HOLD_LIMIT_S = 60.0  # a hold that is never released lets the engine go on: the test fails, it does not hang


@dataclass
class Tap:
    """Every command and event of the host, with the engine's step count when it passed.

    `hold(at, until)`: the engine thread stops in the event that matches `at` (taps run on it before
    the clients see the event) until a record matching `until` has come, so a test can make the
    engine wait for another thread (the server noticing a hang-up) instead of racing it.
    """

    records: list[tuple[str, object, int, float]] = field(default_factory=list)
    condition: threading.Condition = field(default_factory=threading.Condition)
    holds: list[tuple[Match, Match]] = field(default_factory=list)
    held: list[tuple[object, int]] = field(default_factory=list)  # (the event, the step) where it held

    def __call__(self, kind: str, message: object, steps: int) -> None:
        with self.condition:
            self.records.append((kind, message, steps, time.perf_counter()))
            held = next((hold for hold in self.holds if kind == "event" and hold[0](kind, message)), None)
            if held is not None:
                self.holds.remove(held)
                self.held.append((message, steps))
            self.condition.notify_all()
            if held is not None:
                start = len(self.records)
                self.condition.wait_for(lambda: any(held[1](k, m) for k, m, _, _ in self.records[start:]),
                                        HOLD_LIMIT_S)

    def hold(self, at: Match, until: Match) -> None:
        with self.condition:
            self.holds.append((at, until))

    def release_all(self) -> None:
        with self.condition:
            self.holds.clear()
            self.held.clear()

    def wait_held(self, timeout: float = 120.0) -> tuple[object, int]:
        with self.condition:
            assert self.condition.wait_for(lambda: self.held, timeout), "the engine never reached the hold"
            return self.held[-1]

    def wait(self, predicate: Match, timeout: float = 120.0,
             after: int = 0) -> tuple[str, object, int, float]:
        deadline = time.monotonic() + timeout
        with self.condition:
            while True:
                for record in self.records[after:]:
                    if predicate(record[0], record[1]):
                        return record
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"timed out; last records: {self.records[-5:]}"
                self.condition.wait(remaining)

    def events(self, kind: type) -> list[object]:
        with self.condition:
            return [message for k, message, _, _ in self.records if k == "event" and isinstance(message, kind)]


def load(host: EngineHost, config: ModelConfig) -> None:
    loaded = threading.Event()
    outcome: list[Event] = []

    def on_event(event: Event) -> None:
        if isinstance(event, (ModelLoaded, ModelLoadFailed)):
            outcome.append(event)
            loaded.set()

    client = host.attach("loader", on_event)
    client.send(LoadModel(config))
    assert loaded.wait(120), "the model did not load"
    client.detach()
    assert isinstance(outcome[0], ModelLoaded), outcome


@pytest.fixture(scope="module")
def engine(default_model: str) -> Iterator[EngineHost]:
    host = EngineHost(stats_interval_s=0.2)
    host.start()
    load(host, ModelConfig(path=default_model, context_length=CONTEXT, slots=4, threads=1, batch_tokens=BATCH))
    yield host
    host.shutdown()


@pytest.fixture(scope="module")
def tap(engine: EngineHost) -> Iterator[Tap]:
    recorder = Tap()
    remove = engine.add_tap(recorder)
    yield recorder
    remove()


@pytest.fixture(scope="module")
def server(engine: EngineHost, tap: Tap) -> Iterator[ApiServer]:
    api = ApiServer(engine, ServerOptions(port=0, max_waiting=8))
    api.start()
    yield api
    api.stop()


@pytest.fixture
def client(server: ApiServer):  # type: ignore[no-untyped-def]
    import openai

    with openai.OpenAI(base_url=server.url, api_key="unused", max_retries=0, timeout=120) as api:
        yield api


@pytest.fixture
def claude(server: ApiServer):  # type: ignore[no-untyped-def]
    """The real anthropic client on the same server (/v1/messages)."""
    import anthropic

    with anthropic.Anthropic(base_url=server.url[: -len("/v1")], api_key="unused", max_retries=0, timeout=120) as api:
        yield api


def finished_of(tap: Tap, chat_id: str) -> TurnFinished:
    _, event, _, _ = tap.wait(lambda kind, m: kind == "event" and isinstance(m, TurnFinished) and m.chat_id == chat_id)
    assert isinstance(event, TurnFinished)
    return event

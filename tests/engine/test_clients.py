"""Several clients on one real engine (default model): each gets its own chats' events, all get the model's."""

from __future__ import annotations

import threading
from typing import Iterator

import pytest

from engine.clients import ChatIdTaken, EngineHost
from engine.protocol import (
    Cancel, ChatMessage, CloseChat, EngineStats, Event, LoadModel, ModelConfig, ModelLoaded, SamplingParams, Submit,
    Token, TurnFinished, TurnQueued, TurnStarted,
)

SHORT = SamplingParams(temperature=0, max_new_tokens=12, ignore_eos=True)


class Inbox:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.condition = threading.Condition()

    def __call__(self, event: Event) -> None:
        with self.condition:
            self.events.append(event)
            self.condition.notify_all()

    def wait_for(self, kind: type, chat_id: str | None = None, timeout: float = 120) -> Event:
        def found() -> Event | None:
            return next((e for e in self.events if isinstance(e, kind)
                         and (chat_id is None or getattr(e, "chat_id", None) == chat_id)), None)
        with self.condition:
            assert self.condition.wait_for(lambda: found() is not None, timeout), (kind, chat_id, self.events[-3:])
            event = found()
        assert event is not None
        return event

    def chats(self) -> set[str]:
        with self.condition:
            return {e.chat_id for e in self.events if hasattr(e, "chat_id")}  # type: ignore[attr-defined]


@pytest.fixture
def host(default_model: str) -> Iterator[tuple[EngineHost, Inbox, Inbox]]:
    engine = EngineHost(stats_interval_s=0.1)
    engine.start()
    yield engine, Inbox(), Inbox()
    engine.shutdown()


def ask(chat_id: str, text: str = "Hello") -> Submit:
    return Submit(chat_id, (ChatMessage("user", text),), SHORT)


def test_events_go_to_the_chats_owner_and_model_events_to_everyone(host, default_model: str) -> None:  # type: ignore[no-untyped-def]
    engine, window, api = host
    window_client = engine.attach("window", window)
    api_client = engine.attach("api", api, one_turn_chats=True)
    window_client.send(LoadModel(ModelConfig(path=default_model, context_length=512, threads=1, slots=2)))
    for inbox in (window, api):
        assert isinstance(inbox.wait_for(ModelLoaded), ModelLoaded)
    assert engine.model_info is not None and not engine.loading
    window_client.send(ask("tab-1"))
    api_client.send(ask("api-1"))
    window.wait_for(TurnFinished, "tab-1")
    api.wait_for(TurnFinished, "api-1")
    assert window.chats() == {"tab-1"} and api.chats() == {"api-1"}
    for inbox in (window, api):
        assert inbox.wait_for(EngineStats).slots_total == 2  # type: ignore[attr-defined]
    assert {type(e) for e in api.events if getattr(e, "chat_id", "") == "api-1"} >= {TurnQueued, TurnStarted, Token}
    assert engine.owner_of("tab-1") == "window"
    assert engine.owner_of("api-1") is None  # a one-turn chat is given back when its turn ends


def test_a_chat_id_of_another_client_is_refused(host, default_model: str) -> None:  # type: ignore[no-untyped-def]
    engine, window, api = host
    tabs = engine.attach("tabs", window)
    server = engine.attach("server", api, one_turn_chats=True)
    tabs.send(LoadModel(ModelConfig(path=default_model, context_length=512, threads=1, slots=2)))
    tabs.send(ask("shared"))
    for command in (ask("shared"), Cancel("shared"), CloseChat("shared")):
        with pytest.raises(ChatIdTaken, match="belongs to client tabs"):
            server.send(command)
    window.wait_for(TurnFinished, "shared")
    tabs.detach()  # closes its chats: the id is free again
    assert engine.owner_of("shared") is None
    server.send(ask("shared"))
    assert api.wait_for(TurnFinished, "shared").reason == "length"  # type: ignore[attr-defined]
    with pytest.raises(RuntimeError, match="detached"):
        tabs.send(ask("again"))


def test_stopping_the_engine_ends_the_turns_still_running(host, default_model: str) -> None:  # type: ignore[no-untyped-def]
    engine, window, api = host
    server = engine.attach("api", api, one_turn_chats=True)
    server.send(LoadModel(ModelConfig(path=default_model, context_length=512, threads=1, slots=2)))
    api.wait_for(ModelLoaded)
    server.send(Submit("api-long", (ChatMessage("user", "Hello"),),
                       SamplingParams(temperature=0, max_new_tokens=400, ignore_eos=True)))
    api.wait_for(Token, "api-long")
    engine.shutdown()
    finished = api.wait_for(TurnFinished, "api-long")
    assert finished.reason == "cancelled" and "engine was stopped" in finished.message  # type: ignore[attr-defined]
    assert engine.owner_of("api-long") is None and not engine.running

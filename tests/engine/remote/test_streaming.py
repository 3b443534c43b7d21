"""The remote backend in the real EngineLoop against a fake SSE server: what real servers do only sometimes."""

from __future__ import annotations

import time
from typing import Iterator

import pytest

from engine.protocol import (
    Cancel, ChatMessage, EngineStats, LoadModel, ModelConfig, ModelLoaded, ModelLoadFailed, ReasoningText, SamplingParams,
    Submit, TurnFinished,
)
from tests.engine.engine_harness import EngineHarness
from tests.engine.remote.sse_server import WORDS, FakeServer

ANSWER = "".join(WORDS)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def engine() -> Iterator[EngineHarness]:
    harness = EngineHarness()
    yield harness
    harness.close()


def remote(url: str, **extra: object) -> ModelConfig:
    return ModelConfig(path=url, backend="remote", **extra)  # type: ignore[arg-type]


def connect(engine: EngineHarness, config: ModelConfig) -> ModelLoaded:
    mark = engine.mark()
    engine.loop.send(LoadModel(config))
    event = engine.wait_loaded(timeout=30, after=mark)
    assert isinstance(event, ModelLoaded), event
    return event


def ask(engine: EngineHarness, chat_id: str, text: str, timeout: float = 30) -> TurnFinished:
    mark = engine.mark()
    engine.loop.send(Submit(chat_id, (ChatMessage("user", text),), SamplingParams(max_new_tokens=64, seed=7)))
    return engine.finished(chat_id, mark, timeout)


def test_connect_names_the_model_and_server(engine: EngineHarness, server: FakeServer) -> None:
    info = connect(engine, remote(server.url, remote_model="fake-large")).info
    assert (info.backend, info.name, info.context_length) == ("remote", "fake-large", 2048)
    assert info.device == f"remote: {server.url[:-3]}"


def test_a_turn_streams_the_answer_with_the_tabs_sampling(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    finished = ask(engine, "tab", "Say hello")
    assert (finished.reason, finished.text, finished.message) == ("stop", ANSWER, "")
    assert "".join(text for _, text in engine.tokens("tab")) == ANSWER
    assert (finished.stats.generated_tokens, finished.stats.prompt_tokens) == (len(WORDS), 9)  # the server's usage
    path, _, body = server.record.requests[-1]
    assert path == "/v1/chat/completions"
    assert (body["model"], body["stream"], body["max_tokens"], body["seed"]) == ("fake-small", True, 64, 7)
    assert body["messages"] == [{"role": "user", "content": "Say hello"}]
    stats = engine.wait_for(lambda e: isinstance(e, EngineStats) and e.total_generated_tokens == len(WORDS))
    assert stats.latency_ms > 0 and stats.kv_cache_bytes == 0


def test_keep_alive_comments_and_garbage_lines_are_skipped(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    finished = ask(engine, "tab", "scenario: garbage")
    assert (finished.reason, finished.text) == ("stop", ANSWER)


def test_a_stream_without_done_or_finish_reason_is_interrupted_and_kept(engine: EngineHarness,
                                                                        server: FakeServer) -> None:
    connect(engine, remote(server.url))
    finished = ask(engine, "tab", "scenario: missing-done")
    assert (finished.reason, finished.text) == ("interrupted", ANSWER)
    assert "ended before the answer was finished" in finished.message and "Regenerate" in finished.message


def test_a_finish_reason_without_done_is_a_whole_answer(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    assert ask(engine, "tab", "scenario: finish-without-done").reason == "stop"


def test_a_dropped_connection_keeps_the_text_and_says_so(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    finished = ask(engine, "tab", "scenario: dropped")
    assert (finished.reason, finished.text) == ("interrupted", ANSWER)
    assert "connection to" in finished.message and "was lost mid-answer" in finished.message
    assert ask(engine, "tab", "again").text == ANSWER  # the next turn just works


def test_an_error_event_mid_stream_is_shown_with_the_partial_text(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    finished = ask(engine, "tab", "scenario: error")
    assert (finished.reason, finished.text) == ("error", "Half an answer")
    assert finished.message == "The server reported an error: CUDA out of memory on rank 3"


def test_reasoning_is_kept_apart_from_the_answer(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    mark = engine.mark()
    finished = ask(engine, "tab", "scenario: reasoning")
    assert (finished.text, finished.reasoning) == ("The answer is 4.", "Two plus two: that makes four.")
    thinking = [e.text for _, e in engine.events[mark:] if isinstance(e, ReasoningText)]
    assert thinking == ["Two plus two: ", "that makes four."]
    assert "".join(text for _, text in engine.tokens("tab", mark)) == "The answer is 4."


def test_429_then_503_are_retried_before_the_first_token(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    finished = ask(engine, "tab", "scenario: busy-then-ok")
    assert (finished.reason, finished.text) == ("stop", ANSWER)
    assert server.record.counts["busy-then-ok"] == 3


def test_a_dropped_stream_is_never_retried(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    ask(engine, "tab", "scenario: dropped")
    assert server.record.counts["dropped"] == 1


def test_a_wrong_key_is_refused_when_connecting(engine: EngineHarness) -> None:
    with FakeServer(api_key="right") as keyed:
        engine.loop.send(LoadModel(remote(keyed.url, api_key="wrong")))
        failed = engine.wait_loaded(timeout=30)
        assert isinstance(failed, ModelLoadFailed)
        assert "refused the API key (401: Invalid API key)" in failed.message
        connect(engine, remote(keyed.url, api_key="right"))
        assert ask(engine, "tab", "hello").text == ANSWER
        assert keyed.record.requests[-1][1]["Authorization"] == "Bearer right"


def test_an_html_page_is_not_an_openai_server(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    finished = ask(engine, "tab", "scenario: html")
    assert finished.reason == "error" and "answered with a web page" in finished.message


def test_a_server_that_never_answers_times_out_with_a_message(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url, first_token_timeout_s=1.0))
    finished = ask(engine, "tab", "scenario: never-answers")  # the server would hold it for 30 s
    assert finished.reason == "error" and "took the request but sent nothing for 1 s" in finished.message
    assert finished.text == "" and server.record.counts["never-answers"] == 1  # given up, not asked again


def test_a_stall_after_the_first_token_interrupts(engine: EngineHarness, server: FakeServer) -> None:
    # the server never sends a second chunk, so any stall limit ends it the same way; 1 s leaves a busy
    # machine room to deliver the first one
    connect(engine, remote(server.url, stall_timeout_s=1.0))
    finished = ask(engine, "tab", "scenario: silent-after-first")
    assert (finished.reason, finished.text) == ("interrupted", "One")
    assert "sent nothing for 1 s, so the answer was taken as cut off" in finished.message


def test_stop_closes_the_stream_and_the_next_turn_starts_at_once(engine: EngineHarness, server: FakeServer) -> None:
    connect(engine, remote(server.url))
    mark = engine.mark()
    engine.loop.send(Submit("tab", (ChatMessage("user", "scenario: slow"),), SamplingParams()))
    engine.wait_for(lambda e: len(engine.tokens("tab", mark)) >= 3, timeout=30, after=mark)
    engine.loop.send(Cancel("tab"))
    stopped = engine.finished("tab", mark)
    assert stopped.reason == "cancelled" and stopped.text.startswith(" w0 w1 w2")
    assert ask(engine, "tab", "hello").text == ANSWER
    deadline = time.monotonic() + 10
    while server.record.closed_early < 1 and time.monotonic() < deadline:
        time.sleep(0.05)  # the server notices on its next write, 50 ms later
    assert server.record.closed_early == 1


def test_nothing_listening_says_connection_refused(engine: EngineHarness) -> None:
    with FakeServer() as gone:
        url = gone.url
    engine.loop.send(LoadModel(remote(url)))
    failed = engine.wait_loaded(timeout=30)
    assert isinstance(failed, ModelLoadFailed) and "connection refused" in failed.message

"""The remote backend against real servers on 127.0.0.1: hearth-serve and llama-cpp-python's own, default model.

Each server runs as its own process, started here. Three chats at once, Stop,
the server killed mid-answer (partial text kept, marked interrupted, the engine
still up) and the same engine chatting again once the server is back.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Iterator

import pytest

from engine.bench.api import free_port, wait_ready
from engine.protocol import Cancel, ChatMessage, LoadModel, ModelConfig, ModelLoaded, SamplingParams, Submit, TurnFinished
from tests.engine.engine_harness import EngineHarness

pytestmark = pytest.mark.slow
QUESTION = "What is the capital of France?"
SERVERS = ("hearth-serve", "llama_cpp.server")


def command(kind: str, model: str, port: int) -> list[str]:
    if kind == "hearth-serve":
        return [sys.executable, "-m", "engine.server", "--model", model, "--port", str(port), "--threads", "1",
                "--slots", "4", "--context", "1024"]
    # engine.bench.peer_server is llama_cpp.server with Hearth's weight layout (see its docstring)
    return [sys.executable, "-m", "engine.bench.peer_server", "--model", model, "--host", "127.0.0.1", "--port",
            str(port), "--n_threads", "1", "--n_ctx", "1024", "--interrupt_requests", "False"]


class Server:
    def __init__(self, kind: str, model: str) -> None:
        self.kind, self.model, self.port = kind, model, free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        self.process = subprocess.Popen(command(self.kind, self.model, self.port), stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        wait_ready(self.process, self.port, self.kind)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(30)


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest, default_model: str) -> Iterator[Server]:
    running = Server(request.param, default_model)
    running.start()
    yield running
    running.kill()


@pytest.fixture
def engine(server: Server) -> Iterator[EngineHarness]:
    harness = EngineHarness()
    harness.loop.send(LoadModel(ModelConfig(path=server.url, backend="remote")))
    assert isinstance(harness.wait_loaded(timeout=60), ModelLoaded)
    yield harness
    harness.close()


def submit(engine: EngineHarness, chat_id: str, text: str, max_tokens: int, run_to_max: bool = False) -> None:
    sampling = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_new_tokens=max_tokens, ignore_eos=run_to_max)
    engine.loop.send(Submit(chat_id, (ChatMessage("user", text),), sampling))


def test_three_chats_at_once_answer_sensibly(engine: EngineHarness) -> None:
    mark = engine.mark()
    for chat in ("a", "b", "c"):
        submit(engine, chat, QUESTION, 24, run_to_max=True)
    finished = [engine.finished(chat, mark, timeout=180) for chat in ("a", "b", "c")]
    # Not one text three times: a batching server computes the three in different batch shapes, and
    # greedy choices at a near-tie may part there. Each chat streamed its own whole answer.
    for event in finished:
        assert event.reason in ("stop", "length") and event.text.strip(), event
        assert event.stats.generated_tokens > 3 and event.stats.time_to_first_token_s > 0
        assert "".join(text for _, text in engine.tokens(event.chat_id, mark)) == event.text


def test_stop_ends_the_turn_and_the_next_one_runs(engine: EngineHarness) -> None:
    mark = engine.mark()
    submit(engine, "long", "Write a long story about a lighthouse.", 400, run_to_max=True)
    engine.wait_for(lambda e: len(engine.tokens("long", mark)) >= 3, timeout=120, after=mark)
    engine.loop.send(Cancel("long"))
    stopped = engine.finished("long", mark)
    assert stopped.reason == "cancelled" and 3 <= stopped.stats.generated_tokens < 400
    submit(engine, "next", QUESTION, 16, run_to_max=True)
    answer = engine.finished("next", mark, timeout=120)
    assert answer.reason in ("stop", "length") and answer.text.strip() and answer.stats.generated_tokens > 3


def test_a_killed_server_keeps_the_partial_answers_and_the_engine_reconnects(engine: EngineHarness,
                                                                            server: Server) -> None:
    mark = engine.mark()
    chats = ("x", "y")
    for chat in chats:
        submit(engine, chat, "Write a long story about a lighthouse.", 400, run_to_max=True)
    engine.wait_for(lambda e: any(len(engine.tokens(c, mark)) >= 3 for c in chats), timeout=120, after=mark)
    done_before = {e.chat_id for _, e in engine.events[mark:] if isinstance(e, TurnFinished)}
    server.kill()
    # llama_cpp.server answers one stream at a time: the other has its headers and no token yet
    cuts = [engine.finished(chat, mark, timeout=60) for chat in chats if chat not in done_before]
    assert cuts
    for cut in cuts:
        assert cut.text == "".join(text for _, text in engine.tokens(cut.chat_id, mark))
        assert cut.reason == "interrupted" and "was lost mid-answer" in cut.message, cut
        assert "What arrived is kept; Regenerate to try again." in cut.message
    assert any(cut.text for cut in cuts)  # the one answering had text, and kept it
    assert engine.loop.running
    server.start()  # the same port: the engine was never told anything
    again = engine.mark()
    submit(engine, "x", QUESTION, 16, run_to_max=True)
    back = engine.finished("x", again, timeout=120)
    assert back.reason in ("stop", "length") and back.text.strip() and back.stats.generated_tokens > 3

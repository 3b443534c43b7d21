"""Two real models in one engine: the default GGUF and its Q4_0 requantization, each with its own runner.

Four chats (two on each) stream at once; each answers as its model alone would (teacher-forced against a
runner of that model loaded by itself, within the layout tolerance of the runner's tests). The budget,
keep-alive 0 and an idle TTL on the real estimate and a fake clock.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

import pytest

from engine.catalog.model_files import known_name
from engine.loading import BackendLoader
from engine.protocol import (
    ChatMessage, EngineOptions, Event, LoadModel, ModelConfig, ModelLoaded, ModelLoadFailed, ModelUnloaded,
    SamplingParams, Submit, Token, TurnStarted,
)
from engine.scheduler import Scheduler
from engine.units import format_bytes
from tests.engine.engine_harness import EngineHarness
from tests.engine.runners.llamacpp.test_runner import LAYOUT_TOLERANCE, _assert_follows, _load, _teacher_forced_gaps
from tests.engine.test_models_pool import FakeClock

pytestmark = pytest.mark.slow
# the plain argmax (no repeat penalty, no drafts), as the teacher-forced reference picks
GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=16, ignore_eos=True, speculative="off")
QUESTIONS = ("Write a short poem about the sea.", "Name three fruits and their colours.")


def config(path: str) -> ModelConfig:
    return ModelConfig(path=path, context_length=512, slots=2, threads=1)


def load(engine: EngineHarness, path: str, keep_alive_s: float | None = None) -> Event:
    mark = engine.mark()
    engine.loop.send(LoadModel(config(path), keep_alive_s))
    return engine.wait_loaded(after=mark)


@pytest.fixture(scope="module")
def engine(default_model: str, requantized_model: str) -> Iterator[EngineHarness]:
    harness = EngineHarness()
    for path in (default_model, requantized_model):
        assert isinstance(load(harness, path), ModelLoaded)
    yield harness
    harness.close()


def test_two_chats_on_each_model_stream_at_once_and_answer_as_that_model_alone(
        engine: EngineHarness, default_model: str, requantized_model: str) -> None:
    chats = {f"{tag}{i}": (path, question) for tag, path in (("d", default_model), ("q", requantized_model))
             for i, question in enumerate(QUESTIONS)}
    mark = engine.mark()
    for chat, (path, question) in chats.items():
        engine.loop.send(Submit(chat, (ChatMessage("user", question),), GREEDY, model=path))
    ends = {chat: engine.finished(chat, mark) for chat in chats}
    assert {(end.reason, end.stats.generated_tokens) for end in ends.values()} == {("length", 16)}
    # all four stream at once: every chat had a token before any chat had its last
    tokens = {chat: [when for when, _ in engine.tokens(chat, mark)] for chat in chats}
    assert max(times[0] for times in tokens.values()) < min(times[-1] for times in tokens.values())
    for chat, (path, _) in chats.items():
        model, other = engine.loop.pool.find(path), engine.loop.pool.find(
            requantized_model if path == default_model else default_model)
        assert model is not None and other is not None and isinstance(model.work, Scheduler)
        assert isinstance(other.work, Scheduler) and all(slot.chat_id != chat for slot in other.work.slots)
        slot = next(slot for slot in model.work.slots if slot.chat_id == chat)  # its cache, on its own model
        started = next(e for _, e in engine.events[mark:] if isinstance(e, TurnStarted) and e.chat_id == chat)
        prompt, answer = slot.cached[: started.prompt_tokens], slot.cached[started.prompt_tokens:]
        assert len(answer) >= 15  # the last token sampled is not fed back
        alone = _load(path, slots=1, context_length=512, threads=1)
        try:
            _assert_follows(_teacher_forced_gaps(alone, 0, prompt, answer), LAYOUT_TOLERANCE, f"{chat} beside 3 chats")
        finally:
            alone.close()


class HoldingHarness(EngineHarness):
    """Stops the engine thread at the first token of chat `hold_chat` until `go` is set (events, not time)."""

    hold_chat = "long"

    def __init__(self, **options: object) -> None:
        self.go = threading.Event()
        super().__init__(**options)

    def _collect(self, event: Event) -> None:
        super()._collect(event)
        if isinstance(event, Token) and event.chat_id == self.hold_chat and not self.go.is_set():
            assert self.go.wait(60)


def test_the_budget_keep_alive_zero_and_the_idle_ttl_on_real_models(default_model: str,
                                                                     requantized_model: str) -> None:
    clock = FakeClock()
    engine = HoldingHarness(clock=clock)
    try:
        sizer = BackendLoader()
        need_d, need_q = sizer.need_bytes(config(default_model)), sizer.need_bytes(config(requantized_model))
        assert need_d > 50 * 2**20 and need_q > 50 * 2**20
        budget = need_d + need_q - 1  # one at a time
        engine.loop.send(EngineOptions(budget_bytes=budget, default_keep_alive_s=600))
        assert isinstance(load(engine, default_model), ModelLoaded)
        mark = engine.mark()
        engine.loop.send(Submit("long", (ChatMessage("user", "Tell a story."),), GREEDY, model=default_model))
        engine.wait_for(lambda e: isinstance(e, Token) and e.chat_id == "long", after=mark)  # held there
        engine.loop.send(LoadModel(config(requantized_model)))
        engine.go.set()
        failed = engine.wait_loaded(after=mark)
        assert isinstance(failed, ModelLoadFailed) and failed.previous_kept
        name_d, name_q = known_name(default_model), known_name(requantized_model)
        assert failed.message.startswith(f"{name_q} needs {format_bytes(need_q)}, {format_bytes(budget - need_d)} free "
                                         f"after unloading what is idle, of a budget of {format_bytes(budget)} "
                                         f"({name_d} is answering).")
        engine.finished("long", mark)
        mark = engine.mark()
        assert isinstance(load(engine, requantized_model), ModelLoaded)  # the default one is idle now: it goes
        gone = [e for _, e in engine.events[mark:] if isinstance(e, ModelUnloaded)]
        assert [(g.path, g.reason, g.message) for g in gone] == [
            (default_model, "room", f"Unloaded {name_d} to make room for {name_q} ({format_bytes(need_d)} freed).")]
        # keep-alive 0: the requantized model goes when its turn ends
        mark = engine.mark()
        engine.loop.send(Submit("once", (ChatMessage("user", "Hi"),), GREEDY, model=name_q, keep_alive_s=0))
        assert engine.finished("once", mark).reason == "length"
        unloaded = engine.wait_for(lambda e: isinstance(e, ModelUnloaded), after=mark)
        assert isinstance(unloaded, ModelUnloaded) and (unloaded.path, unloaded.reason) == (requantized_model, "request")
        # the idle TTL: 600 s on the engine's clock, never slept
        assert isinstance(load(engine, default_model), ModelLoaded)
        mark = engine.mark()
        clock.now += 599
        engine.loop.check_keep_alive()
        engine.loop.send(Submit("sync", (ChatMessage("user", "Hi"),), GREEDY, model="nothing"))
        engine.finished("sync", mark)
        assert not any(isinstance(e, ModelUnloaded) for _, e in engine.events[mark:])
        clock.now += 1
        engine.loop.check_keep_alive()
        idle = engine.wait_for(lambda e: isinstance(e, ModelUnloaded), after=mark)
        assert isinstance(idle, ModelUnloaded) and (idle.path, idle.reason) == (default_model, "idle")
        assert idle.message == f"Unloaded {name_d} (idle for 10 min) to free {format_bytes(need_d)}."
        assert engine.loop.pool.models == [] and Path(default_model).exists()
    finally:
        engine.go.set()
        engine.close()

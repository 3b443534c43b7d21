"""Several models in one engine, on scripted runners and a fake clock: routing, turns, budget, keep-alive.

Model-free: the loader hands out FakeRunners (tests/engine/fake_runner.py) with the sizes the test gives;
the real models' tests are in test_engine_two_models.py.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pytest

from engine.protocol import (
    ChatMessage, EngineOptions, EngineStats, Event, LoadModel, ModelConfig, ModelLoaded, ModelLoadFailed, ModelLoading,
    ModelUnloaded, SamplingParams, Submit, TurnFinished, UnloadModel,
)
from engine.runners.base import SlotWork
from tests.engine.engine_harness import EngineHarness
from tests.engine.fake_runner import FakeRunner

GIB = 2**30
A, B, C = "/models/alpha.gguf", "/models/beta.gguf", "/models/gamma.gguf"
GREEDY = SamplingParams(temperature=0, max_new_tokens=400)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class ScriptedLoader:
    """Scripted models: `sizes` are their estimates; a path in `gates` loads only once its event is set."""

    def __init__(self, sizes: dict[str, int], replies: dict[str, str]) -> None:
        self.sizes, self.replies = sizes, replies
        self.gates: dict[str, threading.Event] = {}
        self.forwards: list[str] = []  # every forward pass of every model, in order: the model's path
        self.prompt_tokens: list[int] = []  # beside each: the tokens it read of prompts (not decoding)
        self.step_gates: dict[str, threading.Event] = {}  # a model whose steps wait until its event is set
        self.at_gate = threading.Event()  # set when a step has reached its gate
        self.closed: list[str] = []

    def need_bytes(self, config: ModelConfig) -> int:
        return self.sizes.get(config.path, 0)

    def after_load_bytes(self, config: ModelConfig) -> int:
        return self.sizes.get(config.path, 0) * 4 // 5  # a fifth grows as the chats fill

    def load(self, config: ModelConfig, progress: Callable[[float, str], None], cancelled: Callable[[], bool]) -> FakeRunner:
        gate = self.gates.get(config.path)
        if gate is not None:
            assert gate.wait(30), "the test never let this load finish"
        progress(1.0, "Loaded")
        loader = self

        class Runner(FakeRunner):
            def forward(self, work: Sequence[SlotWork]) -> dict[int, list[int]]:
                gate = loader.step_gates.get(config.path)
                if gate is not None:
                    loader.at_gate.set()
                    assert gate.wait(30), "the test never let this model step"
                loader.forwards.append(config.path)
                loader.prompt_tokens.append(sum(len(w.tokens) for w in work if len(w.tokens) > 1))
                return super().forward(work)

            def close(self) -> None:
                loader.closed.append(config.path)

        runner = Runner({k: f"{Path(config.path).stem}:{v}" for k, v in self.replies.items()}, slots=2,
                        context_length=1024, batch_tokens=1024)
        runner.info = replace(runner.info, name=Path(config.path).stem, path=config.path)
        return runner


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def loader() -> ScriptedLoader:
    return ScriptedLoader({A: int(1.2 * GIB), B: int(1.9 * GIB), C: int(0.5 * GIB)},
                          {"hi": "hello there", "long": "x" * 300})


@pytest.fixture
def engine(clock: FakeClock, loader: ScriptedLoader) -> Iterator[EngineHarness]:
    harness = EngineHarness(clock=clock, loader=loader)
    yield harness
    harness.close()


def load(engine: EngineHarness, path: str, keep_alive_s: float | None = None) -> Event:
    mark = engine.mark()
    engine.loop.send(LoadModel(ModelConfig(path=path), keep_alive_s))
    return engine.wait_loaded(after=mark, timeout=30)


def ask(text: str) -> tuple[ChatMessage, ...]:
    return (ChatMessage("user", text),)


def unloads(engine: EngineHarness, after: int = 0) -> list[ModelUnloaded]:
    return [e for _, e in engine.events[after:] if isinstance(e, ModelUnloaded)]


def sync(engine: EngineHarness) -> int:
    """Wait until the engine has applied everything sent so far (its answers come in order); the mark after."""
    mark = engine.mark()
    engine.loop.send(Submit("sync", ask("hi"), GREEDY, model="/models/none.gguf"))
    engine.finished("sync", mark, timeout=30)
    return engine.mark()


def test_submits_go_to_the_model_they_name_and_the_last_loaded_answers_the_rest(engine: EngineHarness) -> None:
    assert isinstance(load(engine, A), ModelLoaded) and isinstance(load(engine, B), ModelLoaded)
    mark = engine.mark()
    engine.loop.send(Submit("a", ask("hi"), GREEDY, model=A))
    engine.loop.send(Submit("b", ask("hi"), GREEDY, model="alpha"))  # by the name users know
    engine.loop.send(Submit("c", ask("hi"), GREEDY))  # no model: the one loaded last
    texts = {chat: engine.finished(chat, mark, timeout=30).text for chat in "abc"}
    assert texts == {"a": "alpha:hello there", "b": "alpha:hello there", "c": "beta:hello there"}
    engine.loop.send(Submit("d", ask("hi"), GREEDY, model="delta"))
    refused = engine.finished("d", mark, timeout=30)
    assert refused.reason == "error" and refused.message == "The model 'delta' is not loaded; loaded: beta, alpha."


def test_models_with_work_step_in_turn(engine: EngineHarness, loader: ScriptedLoader) -> None:
    load(engine, A), load(engine, B)
    mark = engine.mark()
    engine.loop.send(Submit("a", ask("long"), GREEDY, model=A))
    engine.loop.send(Submit("b", ask("long"), GREEDY, model=B))
    engine.finished("a", mark, timeout=30), engine.finished("b", mark, timeout=30)
    both = loader.forwards[loader.forwards.index(B):]  # from B's first step: A may have stepped alone before
    last_a = len(both) - 1 - both[::-1].index(A)
    together = both[: min(last_a, len(both) - 1 - both[::-1].index(B)) + 1]
    assert len(together) > 100 and all(x != y for x, y in zip(together, together[1:]))


def test_a_long_prompt_comes_in_small_chunks_while_the_other_model_streams(engine: EngineHarness,
                                                                          loader: ScriptedLoader) -> None:
    from engine.tuning import PROMPT_TOKENS_BESIDE_OTHER_MODELS as CAP

    load(engine, A), load(engine, B)
    mark = engine.mark()
    loader.step_gates[A] = threading.Event()  # A's first step waits until B's prompt is in too
    engine.loop.send(Submit("a", ask("long"), GREEDY, model=A))  # 300 tokens to stream
    assert loader.at_gate.wait(30), "A's first step is under way (it reads A's prompt and samples)"
    prompt = "y" * 900 + "|hi"
    engine.loop.send(Submit("b", ask(prompt), GREEDY, model=B))
    loader.step_gates[A].set()
    engine.finished("a", mark, timeout=30), engine.finished("b", mark, timeout=30)
    steps = list(zip(loader.forwards, loader.prompt_tokens))
    last_a = max(i for i, (path, _) in enumerate(steps) if path == A)
    b_reads = [tokens for path, tokens in steps[:last_a] if path == B and tokens]
    assert sum(b_reads) == len(prompt) + 1 and len(b_reads) >= (len(prompt) + 1) // CAP, "read in chunks"
    assert max(b_reads) <= CAP, "no step of B's prompt is larger than the cap while A streams"
    mark, before = engine.mark(), len(loader.forwards)
    other = "z" * 900 + "|hi"  # not B's last prompt, whose start it could reuse
    engine.loop.send(Submit("b2", ask(other), GREEDY, model=B))  # alone now: the whole prompt in one step
    engine.finished("b2", mark, timeout=30)
    assert max(loader.prompt_tokens[before:]) == len(other) + 1


def test_a_load_does_not_stop_the_other_model_and_turns_for_it_wait_for_it(engine: EngineHarness,
                                                                           loader: ScriptedLoader) -> None:
    load(engine, A)
    loader.gates[B] = threading.Event()
    mark = engine.mark()
    engine.loop.send(LoadModel(ModelConfig(path=B)))
    engine.loop.send(Submit("early", ask("hi"), GREEDY, model="beta"))  # held until beta is in
    engine.loop.send(Submit("a", ask("long"), GREEDY, model=A))
    finished_a = engine.finished("a", mark, timeout=30)
    assert finished_a.text == "alpha:" + "x" * 300
    assert not any(isinstance(e, (ModelLoaded, TurnFinished)) and getattr(e, "chat_id", "") != "a"
                   for _, e in engine.events[mark:])
    loader.gates[B].set()
    assert engine.finished("early", mark, timeout=30).text == "beta:hello there"
    kinds = [type(e) for _, e in engine.events[mark:] if isinstance(e, (ModelLoading, ModelLoaded))]
    assert kinds == [ModelLoading, ModelLoaded]


def test_a_load_past_the_budget_unloads_the_least_recently_used_idle_model(engine: EngineHarness, clock: FakeClock,
                                                                           loader: ScriptedLoader) -> None:
    engine.loop.send(EngineOptions(budget_bytes=int(3.2 * GIB)))
    load(engine, A)
    clock.now += 10
    load(engine, C)  # 1.7 GiB with alpha
    clock.now += 10
    mark = engine.mark()
    engine.loop.send(Submit("c", ask("hi"), GREEDY, model=A))  # alpha is used after gamma: gamma is older now
    engine.finished("c", mark, timeout=30)
    loaded = load(engine, B)  # 1.9 GiB: one of the two must go, the older one
    assert isinstance(loaded, ModelLoaded)
    # the estimate it was loaded with travels to the gauge: both figures, the budget counted on the full one
    full = loader.sizes[B]
    assert (loaded.info.estimated_after_load_bytes, loaded.info.estimated_full_bytes) == (full * 4 // 5, full)
    gone = unloads(engine, mark)
    assert [(u.path, u.reason) for u in gone] == [(C, "room")]
    assert gone[0].message == "Unloaded gamma to make room for beta (512 MiB freed)."
    assert C in loader.closed and A not in loader.closed


def test_a_generating_model_is_never_unloaded_and_the_refusal_has_the_figures(engine: EngineHarness) -> None:
    engine.loop.send(EngineOptions(budget_bytes=int(2.6 * GIB)))
    load(engine, A)
    mark = engine.mark()
    engine.loop.send(Submit("busy", ask("long"), GREEDY, model=A))
    engine.loop.send(LoadModel(ModelConfig(path=B)))  # applied with the Submit: alpha is answering
    failed = engine.wait_loaded(after=mark, timeout=30)
    assert isinstance(failed, ModelLoadFailed) and failed.previous_kept
    assert failed.message.startswith("beta needs 1.9 GiB, 1.4 GiB free after unloading what is idle, of a budget of "
                                     "2.6 GiB (alpha is answering).")
    assert engine.finished("busy", mark, timeout=30).text == "alpha:" + "x" * 300
    assert unloads(engine, mark) == []


def test_a_pinned_model_is_never_unloaded_for_room(engine: EngineHarness) -> None:
    engine.loop.send(EngineOptions(budget_bytes=int(2.6 * GIB)))
    load(engine, A, keep_alive_s=-1)
    failed = load(engine, B)
    assert isinstance(failed, ModelLoadFailed) and "(alpha is pinned)" in failed.message
    assert unloads(engine) == []


def test_the_cap_on_loaded_models_unloads_the_idle_one(engine: EngineHarness) -> None:
    engine.loop.send(EngineOptions(max_loaded=1))
    load(engine, A)
    mark = engine.mark()
    assert isinstance(load(engine, C), ModelLoaded)
    assert [(u.path, u.reason) for u in unloads(engine, mark)] == [(A, "room")]
    stats = engine.wait_for(lambda e: isinstance(e, EngineStats), after=mark, timeout=30)
    assert isinstance(stats, EngineStats) and [m.path for m in stats.models] == [C]


def test_keep_alive_zero_unloads_the_model_when_its_turn_ends(engine: EngineHarness) -> None:
    load(engine, A)
    load(engine, B)
    mark = engine.mark()
    engine.loop.send(Submit("once", ask("hi"), GREEDY, model=A, keep_alive_s=0))
    assert engine.finished("once", mark, timeout=30).text == "alpha:hello there"
    gone = engine.wait_for(lambda e: isinstance(e, ModelUnloaded), after=mark, timeout=30)
    assert isinstance(gone, ModelUnloaded) and (gone.path, gone.reason) == (A, "request")
    assert engine.loop.model_info is not None and engine.loop.model_info.path == B


def test_an_idle_model_unloads_when_its_keep_alive_runs_out_on_the_clock(engine: EngineHarness,
                                                                        clock: FakeClock) -> None:
    engine.loop.send(EngineOptions(default_keep_alive_s=120))
    load(engine, A)
    load(engine, B, keep_alive_s=-1)  # pinned: stays however long it idles
    mark = engine.mark()
    engine.loop.send(Submit("a", ask("hi"), GREEDY, model=A))
    engine.finished("a", mark, timeout=30)
    clock.now += 119
    engine.loop.check_keep_alive()
    mark = sync(engine)
    assert unloads(engine) == []
    clock.now += 1
    engine.loop.check_keep_alive()
    gone = engine.wait_for(lambda e: isinstance(e, ModelUnloaded), after=mark, timeout=30)
    assert isinstance(gone, ModelUnloaded) and (gone.path, gone.reason) == (A, "idle")
    assert gone.message == "Unloaded alpha (idle for 2 min) to free 1.2 GiB."
    clock.now += 10**6
    engine.loop.check_keep_alive()
    sync(engine)
    assert [u.path for u in unloads(engine)] == [A]


def test_unload_ends_the_models_turns_and_later_turns_for_it_are_refused(engine: EngineHarness) -> None:
    load(engine, A)
    mark = engine.mark()
    engine.loop.send(Submit("busy", ask("long"), GREEDY, model=A))
    engine.loop.send(UnloadModel("alpha"))
    ended = engine.finished("busy", mark, timeout=30)
    assert (ended.reason, ended.message) == ("cancelled", "alpha was unloaded; send again to load it.")
    engine.loop.send(Submit("after", ask("hi"), GREEDY, model=A))
    assert engine.finished("after", mark, timeout=30).message.startswith("No model is loaded yet.")
    assert [(u.path, u.reason) for u in unloads(engine, mark)] == [(A, "request")]


def test_loading_a_loaded_path_again_replaces_only_that_model(engine: EngineHarness, loader: ScriptedLoader) -> None:
    load(engine, A), load(engine, B)
    mark = engine.mark()
    assert isinstance(load(engine, A), ModelLoaded)
    kinds = [(type(e).__name__, getattr(e, "reason", "")) for _, e in engine.events[mark:]
             if isinstance(e, (ModelUnloaded, ModelLoaded))]
    assert kinds == [("ModelUnloaded", "replaced"), ("ModelLoaded", "")]
    assert loader.closed == [A] and [m.path for m in engine.loop.pool.models] == [B, A]


def test_a_turn_that_ends_within_one_step_is_still_counted_in_the_next_stats(engine: EngineHarness) -> None:
    """The engine reports its figures when it goes idle: also when the turn began and ended in the same step
    (one token here; a fast remote server's whole answer), or the gauge would keep the figures from before."""
    load(engine, A)
    mark = engine.mark()
    engine.loop.send(Submit("quick", ask("hi"), replace(GREEDY, max_new_tokens=1), model=A))
    assert engine.finished("quick", after=mark, timeout=30).stats.generated_tokens == 1
    stats = engine.wait_for(lambda e: isinstance(e, EngineStats) and e.total_generated_tokens == 1, 10, after=mark)
    assert isinstance(stats, EngineStats) and stats.slots_busy == 0

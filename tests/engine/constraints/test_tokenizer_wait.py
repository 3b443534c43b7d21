"""llguidance's tokenizer is built off the engine thread: a constrained turn waits for it while the
other chats keep stepping (counted in events and steps, never timed)."""

from __future__ import annotations

import json
import threading

import pytest

from engine.constraints import ConstraintError
from engine.constraints.slots import SlotConstraints
from engine.parsing.formats import FALLBACK_TOOL_FORMAT, OutputFormat
from engine.parsing.prompt import TurnSetup
from engine.protocol import Constraint, SamplingParams, ToolCallStarted, ToolSpec, TurnStarted
from engine.scheduler import Scheduler
from tests.engine.fake_runner import FakeRunner, encode
from tests.engine.parsing.test_scheduler_parts import END_OF_PROMPT, MarkupRunner
from tests.engine.test_scheduler import finished, run_until_idle, text_of

FREE = SamplingParams(temperature=0, max_new_tokens=200, speculative="off")
WORDS = SamplingParams(temperature=0, max_new_tokens=200, speculative="off", constraint=Constraint("regex", "[a-z ]+"))
LONG = "a long free answer that keeps going while the other chat waits"


def test_the_tokenizer_is_built_on_a_worker_thread() -> None:
    release, built_on = threading.Event(), []
    sentinel = object()

    def build():  # stands in for llguidance.hf.from_tokenizer: it finishes when the test says so
        built_on.append(threading.current_thread())
        release.wait(30)
        return sentinel

    constraints = SlotConstraints(build, 8)  # type: ignore[arg-type]
    assert not constraints.ready() and not constraints.ready(), "it is still being built"
    release.set()
    assert constraints.ready(wait=30) and constraints.tokenizer() is sentinel
    assert len(built_on) == 1 and built_on[0] is not threading.current_thread()


def test_a_tokenizer_that_cannot_be_built_ends_the_turn_with_why() -> None:
    def build():
        raise ValueError("Only fast tokenizers are supported")

    constraints = SlotConstraints(build, 8)  # type: ignore[arg-type]
    assert constraints.ready(wait=30), "a failed build is ready: the turn ends with its message"
    with pytest.raises(ConstraintError, match="fast tokenizers"):
        constraints.set(0, Constraint("regex", "a+"))


def test_free_chats_step_while_a_constrained_one_waits_for_the_tokenizer() -> None:
    runner = FakeRunner({"c": "abc", "f": LONG})
    runner.constraints_gate.clear()
    scheduler = Scheduler(runner)
    events = scheduler.submit("c", encode("c>"), WORDS) + scheduler.submit("f", encode("f>"), FREE)
    for _ in range(20):
        events += scheduler.step()
    assert len(text_of(events, "f")) >= 15, "the free chat kept generating"
    assert not [e for e in events if isinstance(e, TurnStarted) and e.chat_id == "c"], "the constrained one waits"
    assert runner.constraint_waits >= 20
    runner.constraints_gate.set()
    events += run_until_idle(scheduler)
    assert text_of(events, "c") == "abc" and text_of(events, "f") == LONG


def test_a_call_opened_mid_answer_pauses_until_its_grammar_can_be_set() -> None:
    weather = ToolSpec("get_weather", "", json.dumps({"type": "object"}))
    call = '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    runner = MarkupRunner({"c": call, "f": LONG}, context_length=512)
    runner.constraints_gate.clear()
    scheduler = Scheduler(runner)
    setup = TurnSetup(OutputFormat(), FALLBACK_TOOL_FORMAT, False, (weather,), "auto")
    events = scheduler.submit("c", encode("c" + END_OF_PROMPT), FREE, setup)
    events += scheduler.submit("f", encode("f" + END_OF_PROMPT), FREE)
    for _ in range(30):
        events += scheduler.step()
    cached = "".join(chr(t) for t in runner.kv[0])
    assert cached.endswith("<tool_call>") or cached.endswith("<tool_call"), cached
    assert not runner.constraints and not [e for e in events if isinstance(e, ToolCallStarted)]
    assert len(text_of(events, "f")) >= 25, "the free chat kept generating while the call waited"
    runner.constraints_gate.set()
    events += run_until_idle(scheduler)
    assert [c.kind for _, c in runner.constraints if c is not None] == ["lark"]
    assert finished(events, "c").reason == "tool_calls" and text_of(events, "f") == LONG


def test_a_turn_offered_tools_asks_for_the_build_when_it_is_submitted() -> None:
    """Its grammar may be due mid-answer: the runner is asked to build now (Runner.prepare_constraints), not
    when the call opens; a turn with no tools asks nothing."""
    weather = ToolSpec("get_weather", "", json.dumps({"type": "object"}))
    runner = FakeRunner({"f": LONG, "t": "no call after all"})
    scheduler = Scheduler(runner)
    scheduler.submit("f", encode("f>"), FREE)
    assert runner.constraints_prepared == 0
    scheduler.submit("t", encode("t>"), FREE, TurnSetup(OutputFormat(), FALLBACK_TOOL_FORMAT, False, (weather,), "auto"))
    assert runner.constraints_prepared == 1
    events = run_until_idle(scheduler)
    assert text_of(events, "t") == "no call after all" and runner.constraints_prepared == 1


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["llamacpp", pytest.param("hf", marks=pytest.mark.hf)])
def test_the_real_runners_build_at_submit_only_with_a_core_to_spare(
        backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside the prompt's read on every core the build made the first token later; with a core spare (or a
    GPU) it costs the passes nothing and the first call no longer waits for it (docs/benchmarks.md)."""
    from engine.parsing.prompt import prepare_turn
    from engine.protocol import ChatMessage, ModelConfig, Submit
    from engine.runners import load_runner

    path = request.getfixturevalue("default_model" if backend == "llamacpp" else "tiny_model")
    config = ModelConfig(path=path, backend=backend, slots=2, context_length=512, threads=1)  # type: ignore[arg-type]
    runner = load_runner(config, lambda fraction, message: None, lambda: False)
    module = "engine.runners.llamacpp.runner" if backend == "llamacpp" else "engine.runners.hf.runner"
    try:
        constraints = runner._rows.constraints  # type: ignore[attr-defined]
        weather = ToolSpec("get_weather", "Today's weather.", json.dumps({"type": "object"}))
        asked = Submit("t", (ChatMessage("user", "What is the weather?"),), FREE, tools=(weather,))
        text, setup = prepare_turn(runner.render_chat, runner.output_format, asked)
        assert setup.tools is not None
        scheduler = Scheduler(runner)
        scheduler.submit("f", runner.tokenize(runner.render_chat([ChatMessage("user", "Hello.")])), FREE)
        assert not constraints.started, "a turn with no tools builds nothing"
        monkeypatch.setattr(f"{module}.spare_core", lambda threads: False)
        scheduler.submit("t", runner.tokenize(text), FREE, setup)
        assert not constraints.started, "every core in the passes: the build waits for the grammar to be due"
        monkeypatch.setattr(f"{module}.spare_core", lambda threads: threads == 1)  # the runner's own count
        scheduler.submit("t", runner.tokenize(text), FREE, setup)
        assert constraints.started, "a core spare: it starts with the turn, before any step"
        assert runner.constraints_ready(wait=60) and constraints.tokenizer() is not None
    finally:
        runner.close()


@pytest.mark.slow
def test_a_runner_closed_while_its_vocabulary_builds_waits_for_the_build(default_model: str) -> None:
    """The build reads llama.cpp's vocabulary, which close() frees: closing mid-build (a model unloaded or
    replaced just after a tool turn was submitted) crashed the process (segmentation fault, 1 run in 2 of three
    closes). close() now returns only once the build has ended."""
    from engine.protocol import ModelConfig
    from engine.runners import load_runner

    runner = load_runner(ModelConfig(path=default_model, slots=1, context_length=256, threads=1),
                         lambda fraction, message: None, lambda: False)
    constraints = runner._rows.constraints  # type: ignore[attr-defined]
    assert not runner.constraints_ready(), "the build has just started (it takes a few hundred ms)"
    build = constraints._vocabulary._thread
    assert build is not None and build.is_alive()
    runner.close()
    assert not build.is_alive(), "close() returned while the build still read the vocabulary"

"""Reasoning on the real llama.cpp runner: copies of the default GGUF with reasoning templates.

One copy's template opens `<think>` in its generation prompt (as the R1 distills' do), the other is
Qwen3's own template (an `enable_thinking` switch). What the model writes is kept from spelling a
marker itself by a regular-expression constraint (lower-case letters and spaces, at least 200 of
them, so it can neither close the thinking nor stop early): the test then rests on the engine, not
on what a 135M model happens to say.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.parsing.prompt import TurnSetup, prepare_turn
from engine.protocol import (
    ChatMessage,
    Constraint,
    Event,
    ModelConfig,
    ReasoningText,
    SamplingParams,
    Submit,
    Token,
    ToolCallArguments,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
)
from engine.scheduler import Scheduler

pytestmark = pytest.mark.slow

TEMPLATES = Path(__file__).parent / "templates"
OPENS_THINKING = (
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}{% set content = message['content'].split('</think>')[-1] %}"
    "{% else %}{% set content = message['content'] %}{% endif %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + content + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n<think>\n' }}{% endif %}"
)
LETTERS = Constraint("regex", "[a-z ]{200,400}")
QUESTION = ChatMessage("user", "Tell me about cats.")


def copy_with_template(source: str, target: Path, template: str) -> str:
    tool = Path(sys.executable).parent / "gguf-new-metadata"
    subprocess.run([str(tool), source, str(target), "--chat-template", template, "--force"], check=True,
                   capture_output=True, timeout=300)
    return str(target)


def load(path: str):  # -> LlamaCppRunner
    from engine.runners.llamacpp.runner import LlamaCppRunner

    return LlamaCppRunner.load(ModelConfig(path=path, slots=2, context_length=1024), lambda f, m: None, lambda: False)


@pytest.fixture(scope="module")
def thinking_runner(default_model: str, tmp_path_factory: pytest.TempPathFactory):
    path = copy_with_template(default_model, tmp_path_factory.mktemp("think") / "opens-think.gguf", OPENS_THINKING)
    runner = load(path)
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def qwen3_runner(default_model: str, tmp_path_factory: pytest.TempPathFactory):
    template = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text()
    path = copy_with_template(default_model, tmp_path_factory.mktemp("qwen3") / "qwen3-template.gguf", template)
    runner = load(path)
    yield runner
    runner.close()


def run_turn(runner, submit: Submit) -> tuple[list[Event], TurnFinished, Scheduler, str]:  # type: ignore[no-untyped-def]
    """One turn as the engine loop runs it (EngineLoop._submit): prompt, parser setup, scheduler."""
    for slot in range(runner.slots):
        runner.clear_slot(slot)
    text, setup = prepare_turn(runner.render_chat, runner.output_format, submit)
    scheduler = Scheduler(runner)
    events = scheduler.submit(submit.chat_id, runner.tokenize(text), submit.sampling, setup)
    while scheduler.has_work():
        events += scheduler.step()
    done = next(e for e in events if isinstance(e, TurnFinished))
    return events, done, scheduler, text


def joined(events: list[Event], kind: type) -> str:
    return "".join(e.text for e in events if isinstance(e, kind))  # type: ignore[attr-defined]


def test_output_after_an_opened_thought_streams_as_reasoning(thinking_runner) -> None:  # type: ignore[no-untyped-def]
    assert thinking_runner.info.capabilities == ("reasoning", "thinking_switch")  # Think off: the empty thought
    params = SamplingParams(temperature=0, max_new_tokens=16, constraint=LETTERS)
    events, done, _, prompt = run_turn(thinking_runner, Submit("a", (QUESTION,), params))
    assert prompt.endswith("<think>\n")
    assert not any(isinstance(e, Token) for e in events), "nothing of the thinking reaches the answer"
    assert joined(events, ReasoningText) == done.reasoning and done.reasoning.strip()
    assert (done.reason, done.text, done.stats.reasoning_tokens) == ("length", "", 16)


def test_budget_closes_the_thinking_and_the_answer_streams(thinking_runner) -> None:  # type: ignore[no-untyped-def]
    params = SamplingParams(temperature=0, max_new_tokens=48, constraint=LETTERS, reasoning_budget=24)
    events, done, scheduler, _ = run_turn(thinking_runner, Submit("a", (QUESTION,), params))
    assert done.stats.reasoning_tokens == 24
    assert joined(events, ReasoningText) == done.reasoning and done.reasoning.strip()
    assert joined(events, Token) == done.text and done.text.strip(), "the model answered after the closed thought"
    kinds = [type(e) for e in events if isinstance(e, (Token, ReasoningText))]
    assert kinds.index(Token) > max(i for i, kind in enumerate(kinds) if kind is ReasoningText)
    close = thinking_runner.tokenize("\n</think>\n\n")[1:]  # without the BOS
    cached = scheduler.slots[0].cached
    assert any(cached[i : i + len(close)] == close for i in range(len(cached))), "the closing marker was fed"
    assert "</think>" not in done.text + done.reasoning
    # The next turn's prompt has the answer, not the thinking (the template drops it)
    history = (QUESTION, ChatMessage("assistant", done.text, reasoning=done.reasoning), ChatMessage("user", "More."))
    text, _ = prepare_turn(thinking_runner.render_chat, thinking_runner.output_format, Submit("a", history))
    assert done.text.strip() in text and done.reasoning not in text


def test_qwen3_template_think_off(qwen3_runner) -> None:  # type: ignore[no-untyped-def]
    assert qwen3_runner.info.capabilities == ("tools", "reasoning", "thinking_switch")
    params = SamplingParams(temperature=0, max_new_tokens=12, constraint=LETTERS)
    off = Submit("a", (QUESTION,), params, template_options=(("enable_thinking", "false"),))
    events, done, _, prompt = run_turn(qwen3_runner, off)
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n"), "the switch is rendered"
    assert not any(isinstance(e, ReasoningText) for e in events) and done.reasoning == ""
    assert joined(events, Token) == done.text and done.text.strip()
    on_prompt, setup = prepare_turn(qwen3_runner.render_chat, qwen3_runner.output_format, Submit("a", (QUESTION,)))
    assert on_prompt.endswith("<|im_start|>assistant\n") and isinstance(setup, TurnSetup) and not setup.in_reasoning


WEATHER = ToolSpec("get_weather", "The weather in a city.", json.dumps({
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                     "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city", "unit"], "additionalProperties": False}))


@pytest.fixture(scope="module")
def plain_runner(default_model: str):  # -> LlamaCppRunner
    runner = load(default_model)
    yield runner
    runner.close()


def test_required_tool_call_always_parses(plain_runner) -> None:  # type: ignore[no-untyped-def]
    """The bundled model's template has no tools: the fallback prompt, Hermes calls, under the call grammar."""
    import jsonschema

    assert plain_runner.info.capabilities == ()
    question = ChatMessage("user", "What is the weather in Paris?")
    for seed in range(4):  # one call each: several in a row could run to any length at temperature 1
        params = SamplingParams(temperature=1.0, seed=seed, max_new_tokens=200)
        submit = Submit("a", (question,), params, tools=(WEATHER,), tool_choice="required",
                        parallel_tool_calls=False)
        events, done, _, prompt = run_turn(plain_runner, submit)
        assert "<tool_call>" in prompt and "get_weather" in prompt
        assert done.reason == "tool_calls" and done.tool_calls and done.text == ""
        assert len(done.tool_calls) == 1
        started = [e for e in events if isinstance(e, ToolCallStarted)]
        assert [e.call_id for e in started] == [call.id for call in done.tool_calls]
        for index, call in enumerate(done.tool_calls):
            assert call.name == "get_weather"
            jsonschema.validate(json.loads(call.arguments), json.loads(WEATHER.parameters))
            fragments = [e.text for e in events if isinstance(e, ToolCallArguments) and e.index == index]
            assert "".join(fragments) == call.arguments

"""The scheduler's events for a turn's parts, driven by the scripted runner (one character per token)."""

from __future__ import annotations

import json
from dataclasses import replace

from engine.parsing.call_grammar import WHITESPACE
from engine.parsing.formats import FALLBACK_TOOL_FORMAT, OutputFormat, ReasoningFormat
from engine.parsing.prompt import TurnSetup
from engine.protocol import (
    Constraint,
    ReasoningText,
    SamplingParams,
    Token,
    ToolCallArguments,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
)
from engine.scheduler import Scheduler
from tests.engine.fake_runner import EOS, FakeRunner, encode
from tests.engine.test_scheduler import finished, run_until_idle, text_of

THINK = OutputFormat(reasoning=ReasoningFormat("think", "<think>", "</think>"))
GREEDY = SamplingParams(temperature=0, max_new_tokens=120)
WEATHER = ToolSpec("get_weather", "", json.dumps({"type": "object", "properties": {"city": {"type": "string"}}}))
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'


class MarkupRunner(FakeRunner):
    """The scripted runner whose prompts end at a control character: the replies hold '>' in their markers."""

    def _next(self, cached: list[int]) -> int:
        prompt, _, generated = "".join(chr(t) for t in cached).partition(END_OF_PROMPT)
        reply = self.replies[prompt]
        return ord(reply[len(generated)]) if len(generated) < len(reply) else EOS


END_OF_PROMPT = "\x01"


def reasoning_of(events: list, chat_id: str = "a") -> str:
    return "".join(e.text for e in events if isinstance(e, ReasoningText) and e.chat_id == chat_id)


def run(reply: str, setup: TurnSetup, params: SamplingParams = GREEDY) -> tuple[FakeRunner, list]:
    runner = MarkupRunner({"q": reply}, output_format=setup.output)
    scheduler = Scheduler(runner)
    events = scheduler.submit("a", encode("q" + END_OF_PROMPT), params, setup)
    return runner, events + run_until_idle(scheduler)


def test_thinking_and_answer_come_as_their_own_events() -> None:
    _, events = run("<think>\nPlan it.\n</think>\n\nThe answer.", TurnSetup(THINK, None, False))
    assert reasoning_of(events) == "Plan it."
    assert text_of(events, "a") == "The answer."
    done = finished(events, "a")
    assert (done.reason, done.text, done.reasoning) == ("stop", "The answer.", "Plan it.")
    # <think> is 7 tokens read before the thinking opens; the thinking's tokens run up to its closing marker
    assert done.stats.reasoning_tokens == len("\nPlan it.\n</think>")
    assert done.stats.reasoning_s >= 0.0 and done.stats.generated_tokens == len("<think>\nPlan it.\n</think>\n\nThe answer.")
    assert all("<think>" not in e.text for e in events if isinstance(e, (Token, ReasoningText)))


def test_prompt_opened_thinking_and_no_answer() -> None:
    _, events = run("Only thoughts, cut", TurnSetup(THINK, None, True), SamplingParams(temperature=0, max_new_tokens=10))
    done = finished(events, "a")
    assert (done.reason, done.text, done.reasoning) == ("length", "", "Only thoug")
    assert done.stats.reasoning_tokens == 10


def test_budget_closes_the_thinking_and_the_model_answers() -> None:
    runner, events = run("t" * 60 + "A" * 10, TurnSetup(THINK, None, True),
                         SamplingParams(temperature=0, max_new_tokens=80, reasoning_budget=12))
    done = finished(events, "a")
    assert done.reasoning == "t" * 12 and done.stats.reasoning_tokens == 12
    assert done.text and "</think>" not in done.text, "the answer streams as text after the closed thinking"
    cached = "".join(chr(t) for t in runner.kv[0])
    assert "t" * 12 + "\n</think>\n\n" in cached, "the closing marker was written into the sequence and fed"


def test_stop_strings_apply_to_the_answer_not_the_thinking() -> None:
    params = SamplingParams(temperature=0, max_new_tokens=120, stop=("STOP",))
    _, events = run("<think>I could STOP here</think>Answer then STOP and more", TurnSetup(THINK, None, False), params)
    done = finished(events, "a")
    assert done.reasoning == "I could STOP here"
    assert (done.reason, done.text) == ("stop", "Answer then ")


def test_tool_call_events_and_reason() -> None:
    setup = TurnSetup(OutputFormat(), FALLBACK_TOOL_FORMAT, False, (WEATHER,), "auto")
    runner, events = run("Checking.\n" + CALL, setup)
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.index, e.name) for e in started] == [(0, "get_weather")] and started[0].call_id.startswith("call_")
    arguments = "".join(e.text for e in events if isinstance(e, ToolCallArguments))
    done = finished(events, "a")
    assert done.reason == "tool_calls" and done.text == "Checking.\n"
    assert [(c.id, c.name, c.arguments) for c in done.tool_calls] == [(started[0].call_id, "get_weather", arguments)]
    assert json.loads(arguments) == {"city": "Paris"}
    # auto: the call grammar was installed once the model had written the opening marker
    assert [c.kind for _, c in runner.constraints if c is not None] == ["lark"]


def test_required_constrains_from_the_first_token() -> None:
    setup = TurnSetup(OutputFormat(), FALLBACK_TOOL_FORMAT, False, (WEATHER,), "required")
    runner = MarkupRunner({"q": CALL})
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("q" + END_OF_PROMPT), GREEDY, setup)
    (sequence,) = scheduler.waiting
    assert sequence.params.constraint is not None and "get_weather" in sequence.params.constraint.source


def test_required_after_opened_thinking_waits_for_its_end() -> None:
    setup = TurnSetup(THINK, FALLBACK_TOOL_FORMAT, True, (WEATHER,), "required")
    runner, events = run("Weather.</think>" + CALL, setup)
    assert [c.kind for _, c in runner.constraints if c is not None] == ["lark"]
    done = finished(events, "a")
    assert done.reason == "tool_calls" and done.reasoning == "Weather."


def test_cancel_keeps_the_parts() -> None:
    runner = MarkupRunner({"q": "<think>abc</think>xyz"}, output_format=THINK)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("q" + END_OF_PROMPT), GREEDY, TurnSetup(THINK, None, False))
    for _ in range(12):
        scheduler.step()
    (done,) = [e for e in scheduler.cancel_all("model changed") if isinstance(e, TurnFinished)]
    assert (done.reason, done.reasoning, done.message) == ("cancelled", "abc", "model changed")


def test_a_call_cut_by_max_tokens_is_left_out_and_the_reason_says_length() -> None:
    setup = TurnSetup(OutputFormat(), FALLBACK_TOOL_FORMAT, False, (WEATHER,), "auto")
    cut_at = CALL.index("Paris") + 2
    _, events = run(CALL, setup, SamplingParams(temperature=0, max_new_tokens=cut_at))
    done = finished(events, "a")
    assert done.reason == "length" and done.tool_calls == ()
    assert any(isinstance(e, ToolCallStarted) for e in events)  # the window saw it begin; the answer has none
    _, events = run(CALL, setup, SamplingParams(temperature=0, max_new_tokens=len(CALL) + 5))
    whole = finished(events, "a")
    assert whole.reason == "tool_calls" and [json.loads(c.arguments) for c in whole.tool_calls] == [{"city": "Paris"}]


SCHEMA = Constraint("json_schema", json.dumps({"type": "object", "properties": {"n": {"type": "integer"}}}))


def test_a_schema_after_a_thought_the_prompt_opened_holds_the_answer_from_the_close() -> None:
    runner, events = run('Count.</think>{"n": 3}', TurnSetup(THINK, None, True),
                         SamplingParams(temperature=0, max_new_tokens=60, constraint=SCHEMA))
    done = finished(events, "a")
    assert (done.reasoning, done.text) == ("Count.", '{"n": 3}'), "the JSON is the answer, not thinking"
    installed = [(len(runner.sampled_under.get(0, [])), c) for _, c in runner.constraints if c is not None]
    assert len(installed) == 1 and '"n"' in installed[0][1].source and "think" not in installed[0][1].source
    assert runner.sampled_under[0] == encode('{"n": 3}') + [EOS], "every answer token sampled under it, and its end"


def test_a_schema_on_a_thinking_model_leaves_the_thinking_free_from_the_first_token() -> None:
    runner = MarkupRunner({"q": '<think>x</think>{"n": 1}'}, output_format=THINK)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("q" + END_OF_PROMPT), replace(GREEDY, constraint=SCHEMA), TurnSetup(THINK, None, False))
    (sequence,) = scheduler.waiting
    grammar = sequence.params.constraint
    assert grammar is not None and grammar.kind == "lark"
    assert grammar.source.startswith(f'start: (think {WHITESPACE})? response') and '"<think>"' in grammar.source


def test_the_reasoning_budget_ends_a_thought_the_grammar_held_and_the_schema_starts_after_it() -> None:
    setup = TurnSetup(THINK, None, False)
    runner, events = run("<think>" + "t" * 40, setup,
                         SamplingParams(temperature=0, max_new_tokens=60, reasoning_budget=5, constraint=SCHEMA))
    done = finished(events, "a")
    assert done.reasoning == "t" * 5
    fresh = [c for _, c in runner.constraints if c is not None]
    assert len(fresh) == 1 and "think" not in fresh[0].source, "the answer's own grammar, from after the close"
    assert "<think>" + "t" * 5 + "\n</think>\n\n" in "".join(chr(t) for t in runner.kv[0])

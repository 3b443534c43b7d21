"""How many calls one answer makes: one without parallel calls, at most MAX_CALLS_PER_TURN, and no call
repeated (a small model left free writes the same call until max_tokens). Checked on the grammar with
llguidance and on the scheduler with a scripted runner fed the tokens of a model that never stops calling."""

from __future__ import annotations

import json

import pytest

from engine.parsing.call_grammar import MAX_CALLS_PER_TURN, whole_answer
from engine.parsing.formats import FALLBACK_TOOL_FORMAT, OutputFormat
from engine.parsing.prompt import TurnSetup
from engine.protocol import SamplingParams
from engine.scheduler import Scheduler
from tests.engine.fake_runner import encode
from tests.engine.parsing.test_call_grammar import TIME, TOOLS, accepts, tokenizer  # noqa: F401
from tests.engine.parsing.test_scheduler_parts import END_OF_PROMPT, MarkupRunner
from tests.engine.test_scheduler import finished, run_until_idle


LONG = SamplingParams(temperature=0, max_new_tokens=4000)


def hermes(zone: str) -> str:
    return f'<tool_call>\n{json.dumps({"name": "get_time", "arguments": {"zone": zone}})}\n</tool_call>'


def calls(count: int, same: bool = False) -> str:
    return "\n".join(hermes("UTC" if same else f"Z{index}") for index in range(count))


def test_the_grammar_allows_the_cap_and_no_more(tokenizer) -> None:  # noqa: F811
    parallel = whole_answer(FALLBACK_TOOL_FORMAT, TOOLS, "required", True)
    assert accepts(tokenizer, parallel, calls(2))
    assert accepts(tokenizer, parallel, calls(MAX_CALLS_PER_TURN))
    assert not accepts(tokenizer, parallel, calls(MAX_CALLS_PER_TURN + 1))


def test_without_parallel_calls_the_grammar_is_one_call(tokenizer) -> None:  # noqa: F811
    single = whole_answer(FALLBACK_TOOL_FORMAT, TOOLS, "required", False)
    assert accepts(tokenizer, single, calls(1))
    assert not accepts(tokenizer, single, calls(2))


def run(reply: str, parallel: bool, choice: str = "auto") -> list:
    setup = TurnSetup(OutputFormat(), FALLBACK_TOOL_FORMAT, False, (TIME,), choice, parallel)
    scheduler = Scheduler(MarkupRunner({"q": reply}, context_length=8192))
    events = scheduler.submit("a", encode("q" + END_OF_PROMPT), LONG, setup)
    # Eight calls are ~600 tokens: more steps than run_until_idle's default 500 whenever the drafts (whose
    # lengths follow the steps' measured wall time) happen to be short on a busy machine; the count of
    # steps is not what these tests check.
    return events + run_until_idle(scheduler, limit=5000)


@pytest.mark.parametrize("choice", ["auto", "required"])
def test_one_call_ends_the_turn_without_parallel_calls(choice: str) -> None:
    done = finished(run(calls(5), parallel=False, choice=choice), "a")
    assert done.reason == "tool_calls"
    assert [json.loads(call.arguments) for call in done.tool_calls] == [{"zone": "Z0"}]
    # the call is whole once its object closes: nothing of a second call was generated
    assert done.stats.generated_tokens <= len(hermes("Z0"))


def test_a_repeated_call_ends_the_turn() -> None:
    done = finished(run(calls(30, same=True), parallel=True), "a")
    assert done.reason == "tool_calls"
    assert [json.loads(call.arguments) for call in done.tool_calls] == [{"zone": "UTC"}] * 2


def test_distinct_calls_stop_at_the_cap() -> None:
    done = finished(run(calls(MAX_CALLS_PER_TURN + 4), parallel=True), "a")
    assert done.reason == "tool_calls"
    assert [json.loads(c.arguments)["zone"] for c in done.tool_calls] == [f"Z{i}" for i in range(MAX_CALLS_PER_TURN)]

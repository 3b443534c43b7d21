"""The stream holds a call's events until the call is whole, so a call cut by max_tokens never streams."""

from __future__ import annotations

from engine.protocol import Logprobs, Token, ToolCall, ToolCallArguments, ToolCallStarted, TurnFinished, TurnStats
from engine.server.streams import CallHold

STATS = TurnStats(prompt_tokens=1, reused_tokens=0, generated_tokens=1, time_to_first_token_s=0.0,
                  decode_tokens_per_second=0.0, total_s=0.0)


def streamed(events: list, finished: TurnFinished) -> list:
    hold = CallHold()
    out = [released for event in events for released in hold.take(event)]
    return out + hold.finish(finished)


def ended(reason: str, calls: tuple[ToolCall, ...]) -> TurnFinished:
    return TurnFinished("a", reason, STATS, "", "", "", calls)  # type: ignore[arg-type]


def test_a_whole_call_streams_in_order_and_a_cut_one_not_at_all() -> None:
    text = Token("a", "Checking.")
    first = [ToolCallStarted("a", 0, "c0", "get_weather"), ToolCallArguments("a", 0, '{"city": '),
             ToolCallArguments("a", 0, '"Paris"}')]
    second = [ToolCallStarted("a", 1, "c1", "get_time"), ToolCallArguments("a", 1, '{"zone": "C')]
    logprobs = Logprobs("a", ())
    whole = (ToolCall("c0", "get_weather", '{"city": "Paris"}'),)
    out = streamed([text, *first[:2], logprobs, first[2], *second], ended("length", whole))
    assert out == [text, logprobs, *first]  # the cut second call is not streamed
    both = (*whole, ToolCall("c1", "get_time", '{"zone": "C"}'))
    assert streamed([text, *first, *second], ended("tool_calls", both)) == [text, *first, *second]

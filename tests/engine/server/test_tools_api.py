"""Structured output and tools through the real openai client on the real default model.

Nothing here rests on what the model says: answers are checked for their
structure (they parse, validate against the schema, the ids match, the stream
joins to the whole answer), which the engine's constraints guarantee.
"""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import BaseModel, Field

from engine.server import ApiServer
from tests.engine.server.test_bad_requests import assert_openai_error, call
from tests.engine.server.test_other_apis import CITY, GREEDY

pytestmark = pytest.mark.slow
MODEL = "SmolLM2-135M-Instruct.Q4_1"
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"],
                   "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a city now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"]}}}
ASK = [{"role": "user", "content": "What is the weather in Paris and the time in Rome?"}]
WEATHER_ASK = "What is the weather in Paris?"
CALL_TOKENS = 120  # a call in the model's format with a city of at most 20 characters fits well inside


class Pet(BaseModel):
    """Bounded fields: the constrained answer always ends well inside max_tokens."""

    name: str = Field(max_length=16)
    legs: int = Field(ge=0, le=8)
    can_fly: bool


def test_parse_returns_the_pydantic_object(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.chat.completions.parse(
        model=MODEL, messages=[{"role": "user", "content": "Describe a pet as JSON."}], response_format=Pet,
        max_tokens=120, temperature=1.0, seed=3)
    message = answer.choices[0].message
    assert answer.choices[0].finish_reason == "stop"
    assert isinstance(message.parsed, Pet) and message.parsed == Pet.model_validate_json(message.content)


def test_json_object_mode_gives_an_object(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "A JSON object."}],
                                            response_format={"type": "json_object"}, max_tokens=CALL_TOKENS, seed=1)
    if answer.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(answer.choices[0].message.content), dict)


def _calls_valid(calls, tools) -> None:  # type: ignore[no-untyped-def]
    schemas = {tool["function"]["name"]: tool["function"]["parameters"] for tool in tools}
    assert calls
    for call_ in calls:
        assert call_.type == "function" and call_.id and call_.function.name in schemas
        jsonschema.validate(json.loads(call_.function.arguments), schemas[call_.function.name])


def test_a_tool_loop_required_then_auto(client) -> None:  # type: ignore[no-untyped-def]
    first = client.chat.completions.create(model=MODEL, messages=ASK, tools=[WEATHER], tool_choice="required",
                                           parallel_tool_calls=False, max_tokens=CALL_TOKENS, temperature=0)
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    _calls_valid(choice.message.tool_calls, [WEATHER])
    history = [*ASK, choice.message.model_dump(exclude_none=True)]
    history += [{"role": "tool", "tool_call_id": c.id, "content": "sunny, 21 C"} for c in choice.message.tool_calls]
    second = client.chat.completions.create(model=MODEL, messages=history, tools=[WEATHER], tool_choice="auto",
                                            max_tokens=40, temperature=0)
    after = second.choices[0]
    assert after.finish_reason in ("stop", "length", "tool_calls")
    if after.finish_reason == "tool_calls":
        _calls_valid(after.message.tool_calls, [WEATHER])
    else:
        assert after.message.tool_calls is None and isinstance(after.message.content, str)
    assert second.usage.prompt_tokens > first.usage.prompt_tokens  # the call and its result are in the prompt


def test_a_named_tool_choice_calls_that_tool(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.chat.completions.create(
        model=MODEL, messages=ASK, tools=[WEATHER, TIME], max_tokens=CALL_TOKENS, temperature=0,
        parallel_tool_calls=False,
        tool_choice={"type": "function", "function": {"name": "get_time"}})
    calls = answer.choices[0].message.tool_calls
    _calls_valid(calls, [WEATHER, TIME])
    assert {c.function.name for c in calls} == {"get_time"}


def test_streamed_tool_call_deltas_join_to_the_same_call(client) -> None:  # type: ignore[no-untyped-def]
    fields = dict(model=MODEL, messages=ASK, tools=[WEATHER], tool_choice="required", max_tokens=CALL_TOKENS, seed=7,
                  parallel_tool_calls=False,
                  temperature=0)
    client.chat.completions.create(**{**fields, "max_tokens": 1})  # warm-up: both below reuse the same cache
    whole = client.chat.completions.create(**fields).choices[0].message
    chunks = list(client.chat.completions.create(**fields, stream=True))
    deltas = [d for c in chunks if c.choices for d in c.choices[0].delta.tool_calls or ()]
    first = deltas[0]
    assert first.id and first.type == "function" and first.function.name and first.function.arguments == ""
    joined: dict[int, list[str]] = {}
    for delta in deltas:
        joined.setdefault(delta.index, []).append(delta.function.arguments or "")
    names = [d.function.name for d in deltas if d.id]
    assert names == [c.function.name for c in whole.tool_calls]
    assert ["".join(joined[i]) for i in sorted(joined)] == [c.function.arguments for c in whole.tool_calls]
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]


@pytest.mark.parametrize("parallel", [False, True])
def test_parallel_tool_calls(client, parallel: bool) -> None:  # type: ignore[no-untyped-def]
    answer = client.chat.completions.create(model=MODEL, messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
                                            parallel_tool_calls=parallel, max_tokens=120, temperature=0)
    choice = answer.choices[0]
    calls = choice.message.tool_calls
    assert len({c.id for c in calls}) == len(calls)
    if parallel:  # as many calls as the model makes: a small model may go on until max_tokens
        assert choice.finish_reason in ("tool_calls", "length") and calls
        _calls_valid(calls[:1], [WEATHER, TIME])
    else:  # one call, and the grammar ends the answer after it
        assert choice.finish_reason == "tool_calls" and len(calls) == 1
        _calls_valid(calls, [WEATHER, TIME])


def test_logprobs_on_chat_and_completions(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.chat.completions.create(model=MODEL, messages=ASK, max_tokens=5, temperature=0, logprobs=True,
                                            top_logprobs=3)
    content = answer.choices[0].logprobs.content
    assert len(content) == answer.usage.completion_tokens and all(len(e.top_logprobs) == 3 for e in content)
    assert all(e.logprob <= 0 and e.top_logprobs[0].logprob >= e.top_logprobs[-1].logprob for e in content)
    plain = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=4, temperature=0, logprobs=2)
    assert len(plain.choices[0].logprobs.tokens) == plain.usage.completion_tokens
    assert "".join(plain.choices[0].logprobs.tokens) == plain.choices[0].text


BAD = [
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "nothing"}}}},
     "response_format.json_schema.schema"),
    ({"tools": [{"type": "function", "function": {"description": "nameless"}}]}, "tools[0].function.name"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_time"}}}, "tool_choice"),
    ({"messages": [*ASK, {"role": "tool", "tool_call_id": "call_nowhere", "content": "sunny"}]},
     "messages[1].tool_call_id"),
]


@pytest.mark.parametrize("fields, param", BAD, ids=[param for _, param in BAD])
def test_bad_input_is_a_400_naming_the_field(server: ApiServer, fields: dict, param: str) -> None:
    status, _, answer = call(server.port, "POST", "/v1/chat/completions", {"messages": ASK, "max_tokens": 3, **fields})
    assert status == 400
    assert param in assert_openai_error(answer, "invalid_request_error", param)


# ---------------------------------------------------------------- the same through /v1/messages and /v1/responses


def test_anthropic_tool_round_trip(claude) -> None:  # type: ignore[no-untyped-def]
    tools = [{"name": "get_weather", "description": "The weather in a city", "input_schema": CITY}]
    ask = [{"role": "user", "content": WEATHER_ASK}]
    first = claude.messages.create(model="m", max_tokens=CALL_TOKENS, extra_body=GREEDY, tools=tools, messages=ask,
                                   tool_choice={"type": "any", "disable_parallel_tool_use": True})
    uses = [b for b in first.content if b.type == "tool_use"]
    assert first.stop_reason == "tool_use" and uses
    for use in uses:
        assert use.name == "get_weather" and use.id
        jsonschema.validate(use.input, CITY)
    history = [*ask, {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in first.content]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "sunny"}
                                            for u in uses]}]
    second = claude.messages.create(model="m", max_tokens=30, extra_body=GREEDY, tools=tools, messages=history)
    assert second.stop_reason in ("end_turn", "max_tokens", "tool_use") and second.content
    assert second.usage.input_tokens + (second.usage.cache_read_input_tokens or 0) > first.usage.input_tokens


def test_anthropic_structured_output(claude) -> None:  # type: ignore[no-untyped-def]
    message = claude.messages.create(model="m", max_tokens=CALL_TOKENS, extra_body=GREEDY,
                                     messages=[{"role": "user", "content": "A city as JSON."}],
                                     output_config={"format": {"type": "json_schema", "schema": CITY}})
    if message.stop_reason == "end_turn":
        jsonschema.validate(json.loads(message.content[0].text), CITY)


def test_responses_function_call_round_trip_and_json_format(client) -> None:  # type: ignore[no-untyped-def]
    tools = [{"type": "function", "name": "get_weather", "description": "The weather in a city", "parameters": CITY}]
    first = client.responses.create(model=MODEL, input=WEATHER_ASK, tools=tools, tool_choice="required",
                                    parallel_tool_calls=False,
                                    max_output_tokens=CALL_TOKENS, temperature=0)
    calls = [item for item in first.output if item.type == "function_call"]
    assert calls and all(c.name == "get_weather" and c.call_id for c in calls)
    for c in calls:
        jsonschema.validate(json.loads(c.arguments), CITY)
    items = [{"role": "user", "content": WEATHER_ASK}, *[c.model_dump(exclude_none=True) for c in calls],
             *[{"type": "function_call_output", "call_id": c.call_id, "output": "sunny"} for c in calls]]
    second = client.responses.create(model=MODEL, input=items, tools=tools, max_output_tokens=40, temperature=0,
                                     text={"format": {"type": "json_schema", "name": "city", "schema": CITY,
                                                      "strict": True}})
    if second.status == "completed" and second.output_text:
        jsonschema.validate(json.loads(second.output_text), CITY)
    assert second.usage.input_tokens > first.usage.input_tokens

"""The family fixtures through the real server and the real openai, anthropic and openai-agents clients.

Every family fixture (openai-agents on Qwen3, Llama 3.1 and gpt-oss): each a random-weight model with
the family's real vocabulary and template (tests/families/build.py), loaded once, when a test first asks.
Its words are noise, so only what the grammar forces is asserted: a forced call is the family's marker
as one special token, it parses and fits its schema, a schema answer validates and holds no marker, and
the stream joins to the answer that is not streamed.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import jsonschema
import pytest

from engine.clients import EngineHost
from engine.protocol import ModelConfig
from engine.server import ApiServer, ServerOptions
from tests.engine.server.conftest import load
from tests.families.build import family_model

pytestmark = pytest.mark.slow
NAMES = ("qwen3", "llama3_1", "gpt_oss", "qwen2_5", "qwen3_coder", "mistral_nemo", "devstral", "ministral_reasoning",
         "r1_distill", "gemma4")
AGENTS = NAMES[:3]  # what openai-agents adds over /v1/responses is the loop, not a family's format
# the call's opening marker as one special token (Llama 3.1's JSON call has none; in the R1 distill's Qwen
# vocabulary DeepSeek's call markers are text)
MARKER = {"qwen3": "<tool_call>", "gpt_oss": "<|channel|>", "llama3_1": None, "qwen2_5": "<tool_call>",
          "qwen3_coder": "<tool_call>", "mistral_nemo": "[TOOL_CALLS]", "devstral": "[TOOL_CALLS]",
          "ministral_reasoning": "[TOOL_CALLS]", "r1_distill": None, "gemma4": "<|tool_call>"}
LEAKS = ("<tool_call>", "<think>", "</think>", "<|channel|>", "<|message|>", "<|python_tag|>", "[TOOL_CALLS]",
         "[THINK]", "[/THINK]", "<|tool_call>", "<|channel>", "<channel|>", "<｜tool▁calls▁begin｜>")
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"],
        "additionalProperties": False}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather now", "parameters": CITY}}
TIME = {"type": "function", "function": {"name": "get_time", "description": "The time now", "parameters": CITY}}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
BUDGET = {"reasoning_budget": 8}  # a random model may think forever: the budget ends the thought
TOKENS = 160


class Loaded(dict):  # type: ignore[type-arg]
    """Family -> its model's id on the server, loaded the first time a test asks for it (one load each)."""

    def __init__(self, host: EngineHost, api: ApiServer) -> None:
        super().__init__()
        self.host, self.api = host, api

    def __missing__(self, name: str) -> str:
        import openai

        # one slot: the stream and the answer before it reuse the same cache
        load(self.host, ModelConfig(path=str(family_model(name)), context_length=2048, slots=1, threads=1,
                                    batch_tokens=256, prompt_copy="off"))
        with openai.OpenAI(base_url=self.api.url, api_key="x", max_retries=0, timeout=120) as client:
            self[name] = next(m.id for m in client.models.list().data if m.id.startswith(name + "-"))
        return str(self[name])


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[ApiServer, Loaded]]:
    host = EngineHost(stats_interval_s=0.2)
    host.start()
    api = ApiServer(host, ServerOptions(port=0, max_waiting=8))
    api.start()
    yield api, Loaded(host, api)
    api.stop()
    host.shutdown()


@pytest.fixture(scope="module")
def client(served):  # type: ignore[no-untyped-def]
    import openai

    with openai.OpenAI(base_url=served[0].url, api_key="x", max_retries=0, timeout=120) as api:
        yield api


def valid(name: str, arguments: str | dict[str, Any]) -> None:
    assert name in ("get_weather", "get_time")
    jsonschema.validate(json.loads(arguments) if isinstance(arguments, str) else arguments, CITY)


@pytest.mark.parametrize("family", NAMES)
def test_a_required_call_is_the_marker_token_fits_its_schema_and_streams_alike(client, served, family: str) -> None:  # type: ignore[no-untyped-def]
    fields: dict[str, Any] = dict(model=served[1][family], messages=ASK, tools=[WEATHER, TIME], tool_choice="required",
                                  parallel_tool_calls=False, temperature=0, max_tokens=TOKENS, extra_body=BUDGET)
    client.chat.completions.create(**{**fields, "max_tokens": 1})  # warm-up: both below reuse its cache
    whole = client.chat.completions.create(**fields, logprobs=True)
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    valid(call.function.name, call.function.arguments)
    tokens = [entry.token for entry in choice.logprobs.content]
    if MARKER[family]:
        assert tokens.count(MARKER[family]) >= 1, tokens  # the model's own special token, not spelled in pieces
    joined: dict[int, list[str]] = {}
    content = ""
    for chunk in client.chat.completions.create(**fields, stream=True):
        delta = chunk.choices[0].delta if chunk.choices else None
        content += (delta.content or "") if delta else ""
        for piece in (delta.tool_calls or []) if delta else []:
            entry = joined.setdefault(piece.index, ["", ""])
            entry[0] += piece.function.name or ""
            entry[1] += piece.function.arguments or ""
    assert content == "" and list(joined.values()) == [[call.function.name, call.function.arguments]]


@pytest.mark.parametrize("family", NAMES)
def test_a_named_choice_makes_one_call_and_parallel_calls_each_fit(client, served, family: str) -> None:  # type: ignore[no-untyped-def]
    fields: dict[str, Any] = dict(model=served[1][family], messages=ASK, tools=[WEATHER, TIME], temperature=0,
                                  max_tokens=TOKENS * 3, extra_body=BUDGET)
    named = client.chat.completions.create(**fields, tool_choice={"type": "function", "function": {"name": "get_time"}})
    assert [c.function.name for c in named.choices[0].message.tool_calls] == ["get_time"]
    several = client.chat.completions.create(**{**fields, "temperature": 1.0}, tool_choice="required",
                                             parallel_tool_calls=True, seed=5)
    calls = several.choices[0].message.tool_calls
    assert several.choices[0].finish_reason == "tool_calls" and 1 <= len(calls) <= 8, several.model_dump_json()
    assert len({c.id for c in calls}) == len(calls)
    for call in calls:
        valid(call.function.name, call.function.arguments)


@pytest.mark.parametrize("family", NAMES)
def test_a_schema_answer_comes_after_the_thought_and_tools_beside_it_stay_possible(client, served, family: str) -> None:  # type: ignore[no-untyped-def]
    schema = {"type": "json_schema", "json_schema": {"name": "city", "schema": CITY, "strict": True}}
    fields: dict[str, Any] = dict(model=served[1][family], messages=ASK, temperature=0, max_tokens=TOKENS,
                                  extra_body=BUDGET, response_format=schema)
    client.chat.completions.create(**{**fields, "max_tokens": 1})
    whole = client.chat.completions.create(**fields).choices[0]
    assert whole.finish_reason == "stop" and not any(leak in whole.message.content for leak in LEAKS)
    jsonschema.validate(json.loads(whole.message.content), CITY)
    streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(**fields, stream=True)
                       if c.choices)
    assert streamed == whole.message.content
    both = client.chat.completions.create(**{**fields, "temperature": 1.0}, tools=[WEATHER], tool_choice="auto", seed=2)
    answer = both.choices[0]
    if answer.message.tool_calls:  # a call or the schema's answer: either is whole
        assert answer.finish_reason == "tool_calls"
        for call in answer.message.tool_calls:
            valid(call.function.name, call.function.arguments)
    else:
        assert answer.finish_reason == "stop"
        jsonschema.validate(json.loads(answer.message.content), CITY)
    forced = client.chat.completions.create(**fields, tools=[WEATHER], tool_choice="required").choices[0]
    assert forced.finish_reason == "tool_calls" and forced.message.tool_calls[0].function.name == "get_weather"


@pytest.mark.parametrize("family", NAMES)
def test_anthropic_tool_use_and_responses_function_call(served, family: str) -> None:  # type: ignore[no-untyped-def]
    import anthropic
    import openai

    api, ids = served
    tool = {"name": "get_weather", "description": "The weather now", "input_schema": CITY}
    with anthropic.Anthropic(base_url=api.url[: -len("/v1")], api_key="x", max_retries=0, timeout=120) as claude:
        message = claude.messages.create(model=ids[family], max_tokens=TOKENS, messages=ASK, tools=[tool],
                                         tool_choice={"type": "any"}, extra_body={"temperature": 0, **BUDGET})
        assert message.stop_reason == "tool_use"
        uses = [block for block in message.content if block.type == "tool_use"]
        assert len(uses) >= 1 and [b.type for b in message.content][-len(uses):] == ["tool_use"] * len(uses)
        for use in uses:
            valid(use.name, use.input)
    with openai.OpenAI(base_url=api.url, api_key="x", max_retries=0, timeout=120) as client:
        function = {"type": "function", "name": "get_weather", "description": "The weather now", "parameters": CITY}
        response = client.responses.create(model=ids[family], input="What is the weather in Paris?", tools=[function],
                                           tool_choice="required", max_output_tokens=TOKENS, temperature=0,
                                           extra_body=BUDGET)
        calls = [item for item in response.output if item.type == "function_call"]
        assert response.status == "completed" and calls
        for call in calls:
            valid(call.name, call.arguments)
        shaped = client.responses.create(model=ids[family], input="Which city?", max_output_tokens=TOKENS,
                                         temperature=0, extra_body=BUDGET,
                                         text={"format": {"type": "json_schema", "name": "city", "schema": CITY}})
        jsonschema.validate(json.loads(shaped.output_text), CITY)


@pytest.mark.parametrize("family", AGENTS)
def test_openai_agents_runs_the_tool_and_reads_its_result_in_the_next_turn(served, family: str) -> None:  # type: ignore[no-untyped-def]
    """openai-agents on /v1/responses: a required call runs the tool, and the next turn (the tool's result in
    the family's own template) answers under the agent's output type, or calls again, validly either way."""
    import asyncio

    import openai
    from agents import Agent, FunctionTool, ModelSettings, OpenAIResponsesModel, Runner, set_tracing_disabled
    from agents.exceptions import MaxTurnsExceeded
    from pydantic import BaseModel, Field

    class City(BaseModel):
        city: str = Field(max_length=20)

    seen: list[dict[str, Any]] = []

    async def weather(context: Any, arguments: str) -> str:
        seen.append(json.loads(arguments))
        return "Sunny, 21 C"

    async def run() -> tuple[Any, list[Any]]:
        async with openai.AsyncOpenAI(base_url=served[0].url, api_key="x", max_retries=0, timeout=120) as client:
            agent = Agent(name="Weather", instructions="Say which city.", output_type=City,
                          model=OpenAIResponsesModel(model=served[1][family], openai_client=client),
                          tools=[FunctionTool(name="get_weather", description="The weather now",
                                              params_json_schema=CITY, on_invoke_tool=weather)],
                          model_settings=ModelSettings(tool_choice="required", temperature=0, max_tokens=TOKENS,
                                                       extra_body=BUDGET))
            try:
                result = await Runner.run(agent, "What is the weather in Paris?", max_turns=2)
            except MaxTurnsExceeded as error:  # the second turn called again (its result is not read)
                assert error.run_data is not None
                return None, error.run_data.raw_responses
            return result.final_output, result.raw_responses

    set_tracing_disabled(True)
    final, responses = asyncio.run(run())
    assert len(responses) == 2 and seen, "the tool ran and the model was asked again with its result"
    for arguments in seen:
        jsonschema.validate(arguments, CITY)
    if final is not None:
        assert isinstance(final, City)
    else:
        assert len(seen) == 2, "the second turn ended in a call"

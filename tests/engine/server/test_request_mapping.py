"""What each API's request becomes in the engine's Submit, and the 400s that name the field (model-free)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.protocol import ChatMessage, Constraint, ToolCall
from engine.server.anthropic_request import MessagesRequest, messages_submit
from engine.server.chat_mapping import chat_submit, completion_submit
from engine.server.errors import ApiError
from engine.server.responses_api_request import ResponsesRequest, responses_submit
from engine.server.schema import ChatRequest, CompletionRequest, check_chat, parse

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                           "required": ["city"]}}}
USER = [{"role": "user", "content": "Hi"}]
PERSON = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
          "required": ["name", "age"], "additionalProperties": False}


def chat(**fields: Any):  # type: ignore[no-untyped-def]
    request = parse(ChatRequest, {"messages": USER, **fields})
    check_chat(request)
    return chat_submit("api-1", request, 1024)


def refused(call: Any, **fields: Any) -> ApiError:
    with pytest.raises(ApiError) as error:
        call(**fields)
    assert error.value.status == 400, error.value.message
    return error.value


def test_tools_tool_choice_and_parallel_calls() -> None:
    submit = chat(tools=[WEATHER], tool_choice={"type": "function", "function": {"name": "get_weather"}},
                  parallel_tool_calls=False)
    (tool,) = submit.tools
    assert (tool.name, tool.description) == ("get_weather", "Weather in a city")
    assert json.loads(tool.parameters) == WEATHER["function"]["parameters"]
    assert submit.tool_choice == "get_weather" and submit.parallel_tool_calls is False
    assert chat(tools=[WEATHER]).tool_choice == "auto" and chat(tools=[WEATHER]).parallel_tool_calls
    assert chat(tools=[WEATHER], tool_choice="required").tool_choice == "required"
    named = {"type": "function", "function": {"name": "get_weather"}}
    # a named tool choice is one call unless the client itself allows several
    assert not chat(tools=[WEATHER], tool_choice=named).parallel_tool_calls
    assert chat(tools=[WEATHER], tool_choice=named, parallel_tool_calls=True).parallel_tool_calls
    assert chat(tools=[WEATHER], tool_choice="required").parallel_tool_calls
    assert chat(tools=[WEATHER], tool_choice="none").tool_choice == "none"
    no_parameters = chat(tools=[{"type": "function", "function": {"name": "now"}}]).tools[0]
    assert json.loads(no_parameters.parameters) == {"type": "object", "properties": {}}


@pytest.mark.parametrize("fields, param", [
    ({"tools": [{"type": "function", "function": {"description": "no name"}}]}, "tools[0].function.name"),
    ({"tools": [{"type": "function", "function": {"name": " "}}]}, "tools[0].function.name"),
    ({"tools": [WEATHER, WEATHER]}, "tools[1].name"),
    ({"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "thing"}}}]},
     "tools[0].function.parameters"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "get_time"}}}, "tool_choice"),
    ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ({"tool_choice": "required"}, "tool_choice"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": 5}}}},
     "response_format.json_schema.schema"),
    ({"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}, "response_format.json_schema"),
    ({"response_format": {"type": "yaml"}}, "response_format.type"),
    ({"top_logprobs": 21, "logprobs": True}, "top_logprobs"),
    ({"top_logprobs": 3}, "top_logprobs"),
    ({"functions": [{"name": "f"}]}, "functions"),
    ({"chat_template_kwargs": {"not a name": 1}}, "chat_template_kwargs.not a name"),
    ({"grammar": "root ::= missing"}, "grammar"),
])
def test_bad_tools_and_formats_are_400s_naming_the_field(fields: dict[str, Any], param: str) -> None:
    error = refused(chat, **fields)
    assert error.param == param and f"'{param}'" in error.message, error.message


def test_a_schema_keyword_constrained_decoding_cannot_follow_is_named() -> None:
    unique = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    error = refused(chat, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": unique}})
    assert error.param == "response_format.json_schema.schema" and "'uniqueItems'" in error.message
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "ids": unique}}}}
    assert refused(chat, tools=[tool]).param == "tools[0].function.parameters"


def test_response_formats_become_constraints() -> None:
    assert chat(response_format={"type": "json_object"}).sampling.constraint == Constraint("json_object")
    strict = chat(response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON,
                                                                          "strict": True}})
    assert strict.sampling.constraint is not None and strict.sampling.constraint.kind == "json_schema"
    assert json.loads(strict.sampling.constraint.source) == PERSON
    assert chat(response_format={"type": "text"}).sampling.constraint is None
    assert chat(grammar='root ::= "yes" | "no"').sampling.constraint == Constraint("gbnf", 'root ::= "yes" | "no"')


def test_logprobs_template_options_and_the_thinking_budget() -> None:
    assert chat(logprobs=True, top_logprobs=5).sampling.logprobs == 5
    assert chat(logprobs=True).sampling.logprobs == 0 and chat().sampling.logprobs is None
    submit = chat(chat_template_kwargs={"enable_thinking": False}, reasoning_effort="low", reasoning_budget=24)
    assert submit.template_options == (("enable_thinking", "false"), ("reasoning_effort", '"low"'))
    assert submit.sampling.reasoning_budget == 24 and chat(reasoning_budget=-1).sampling.reasoning_budget is None
    completion = completion_submit("api-2", parse(CompletionRequest, {"prompt": "Once", "logprobs": 2}), 1024)
    assert completion.sampling.logprobs == 2 and completion.prompt == "Once"


def test_a_tool_loop_history_maps_onto_the_engine_messages() -> None:
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": None, "reasoning_content": "They want weather.",
                "tool_calls": [{"id": "call_1", "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
               {"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    submit = chat_submit("api-1", parse(ChatRequest, {"messages": history, "tools": [WEATHER]}), 1024)
    assert submit.messages == (
        ChatMessage("user", "Weather in Paris?"),
        ChatMessage("assistant", "", reasoning="They want weather.",
                    tool_calls=(ToolCall("call_1", "get_weather", '{"city": "Paris"}'),)),
        ChatMessage("tool", "sunny", tool_call_id="call_1", name="get_weather"))


@pytest.mark.parametrize("message, param", [
    ({"role": "tool", "tool_call_id": "call_9", "content": "sunny"}, "messages[1].tool_call_id"),
    ({"role": "tool", "content": "sunny"}, "messages[1].tool_call_id"),
    ({"role": "assistant", "tool_calls": [{"id": "c", "type": "function",
                                           "function": {"name": "f", "arguments": "{oops"}}]},
     "messages[1].tool_calls[0].function.arguments"),
])
def test_a_tool_message_without_a_matching_call_is_a_400(message: dict[str, Any], param: str) -> None:
    error = refused(lambda: chat_submit("api-1", parse(ChatRequest, {"messages": [*USER, message]}), 1024))
    assert error.param == param, error.message


# ---------------------------------------------------------------- Anthropic's messages


def messages(**fields: Any):  # type: ignore[no-untyped-def]
    return messages_submit("api-1", parse(MessagesRequest, {"max_tokens": 64, "messages": USER, **fields}))


def test_anthropic_system_tools_choice_thinking_and_sampling() -> None:
    tool = {"name": "get_weather", "description": "Weather", "input_schema": WEATHER["function"]["parameters"]}
    submit = messages(system=[{"type": "text", "text": "Be brief."}], tools=[tool],
                      tool_choice={"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
                      stop_sequences=["END"], temperature=0.2, top_k=5,
                      thinking={"type": "enabled", "budget_tokens": 100})
    assert submit.messages[0] == ChatMessage("system", "Be brief.")
    assert submit.tools[0].name == "get_weather" and submit.tool_choice == "get_weather"
    assert not messages(tools=[tool], tool_choice={"type": "tool", "name": "get_weather"}).parallel_tool_calls
    assert messages(tools=[tool], tool_choice={"type": "any"}).parallel_tool_calls
    assert not submit.parallel_tool_calls
    assert (submit.sampling.max_new_tokens, submit.sampling.stop, submit.sampling.temperature,
            submit.sampling.top_k, submit.sampling.reasoning_budget) == (64, ("END",), 0.2, 5, 100)
    assert submit.template_options == (("enable_thinking", "true"),)
    assert messages(tools=[tool], tool_choice={"type": "any"}).tool_choice == "required"
    assert messages(thinking={"type": "disabled"}).template_options == (("enable_thinking", "false"),)
    structured = messages(output_config={"effort": "low", "format": {"type": "json_schema", "schema": PERSON}})
    assert structured.sampling.constraint == Constraint("json_schema", json.dumps(PERSON))
    assert structured.template_options == (("reasoning_effort", '"low"'),)


def test_anthropic_tool_use_and_tool_result_blocks() -> None:
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": [{"type": "thinking", "thinking": "Hm.", "signature": ""},
                                                 {"type": "text", "text": "Let me look."},
                                                 {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                                  "input": {"city": "Paris"}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                             "content": [{"type": "text", "text": "sunny"}]},
                                            {"type": "text", "text": "And tomorrow?"}]}]
    submit = messages(messages=history)
    assert submit.messages[1:] == (
        ChatMessage("assistant", "Let me look.", reasoning="Hm.",
                    tool_calls=(ToolCall("toolu_1", "get_weather", '{"city": "Paris"}'),)),
        ChatMessage("tool", "sunny", tool_call_id="toolu_1", name="get_weather"),
        ChatMessage("user", "And tomorrow?"))


@pytest.mark.parametrize("fields, param", [
    ({"max_tokens": None}, "max_tokens"),
    ({"tools": [{"description": "no name", "input_schema": {"type": "object"}}]}, "tools[0].name"),
    ({"tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "tool", "name": "g"}},
     "tool_choice.name"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x",
                                                 "content": "sunny"}]}]}, "messages[0].content[0].tool_use_id"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools[0].type"),
])
def test_anthropic_bad_requests_name_the_field(fields: dict[str, Any], param: str) -> None:
    body = {"max_tokens": 64, "messages": USER, **fields}
    body = {k: v for k, v in body.items() if v is not None}
    error = refused(lambda: messages_submit("api-1", parse(MessagesRequest, body)))
    assert error.param == param, error.message


# ---------------------------------------------------------------- the Responses API


def responses(**fields: Any):  # type: ignore[no-untyped-def]
    return responses_submit("api-1", parse(ResponsesRequest, {"input": "Hi", **fields}), 1024)


def test_responses_input_items_instructions_tools_and_format() -> None:
    tool = {"type": "function", "name": "get_weather", "parameters": WEATHER["function"]["parameters"]}
    items = [{"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
             {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
             {"type": "function_call", "call_id": "call_2", "name": "get_weather", "arguments": '{"city":"Rome"}'},
             {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
             {"type": "function_call_output", "call_id": "call_2", "output": "rain"}]
    submit = responses(input=items, instructions="Be brief.", tools=[tool], tool_choice="required",
                       max_output_tokens=50, reasoning={"effort": "high"},
                       text={"format": {"type": "json_schema", "name": "p", "schema": PERSON, "strict": True}})
    assert [m.role for m in submit.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert [call.id for call in submit.messages[2].tool_calls] == ["call_1", "call_2"]
    assert submit.messages[4] == ChatMessage("tool", "rain", tool_call_id="call_2", name="get_weather")
    assert submit.tool_choice == "required" and submit.sampling.max_new_tokens == 50
    assert submit.sampling.constraint == Constraint("json_schema", json.dumps(PERSON))
    assert submit.template_options == (("reasoning_effort", '"high"'),)
    assert responses().messages == (ChatMessage("user", "Hi"),)


def test_responses_include_the_output_texts_logprobs() -> None:
    assert responses().sampling.logprobs is None
    assert responses(include=["reasoning.encrypted_content"]).sampling.logprobs is None  # named, not kept here
    assert responses(include=["message.output_text.logprobs"]).sampling.logprobs == 0
    assert responses(include=["message.output_text.logprobs"], top_logprobs=3).sampling.logprobs == 3
    assert responses(top_logprobs=2).sampling.logprobs == 2


def test_responses_take_the_reasoning_budget_as_chat_completions_do() -> None:
    assert responses().sampling.reasoning_budget is None
    assert responses(reasoning_budget=8).sampling.reasoning_budget == 8
    assert responses(reasoning_budget=-1).sampling.reasoning_budget is None  # llama-server's "no limit"


@pytest.mark.parametrize("fields, param", [
    ({"previous_response_id": "resp_1"}, "previous_response_id"),
    ({"reasoning_budget": -2}, "reasoning_budget"),
    ({"top_logprobs": 21}, "top_logprobs"),
    ({"tools": [{"type": "function", "description": "no name"}]}, "tools[0].name"),
    ({"tools": [{"type": "web_search"}]}, "tools[0].type"),
    ({"tools": [{"type": "function", "name": "f"}], "tool_choice": {"type": "function", "name": "g"}}, "tool_choice"),
    ({"input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}]}, "input[0].call_id"),
    ({"text": {"format": {"type": "json_schema", "name": "p", "schema": {"required": "name"}}}}, "text.format.schema"),
])
def test_responses_bad_requests_name_the_field(fields: dict[str, Any], param: str) -> None:
    error = refused(responses, **fields)
    assert error.param == param, error.message

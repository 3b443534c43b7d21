"""Anthropic's Messages API through the real anthropic client, the Responses API through the real openai client.

On the real default model, one server for the module. Asserted: the shape of
answers and streams (block and event order, ids that match, a stream that joins
to the whole answer), never what the model says.
"""

from __future__ import annotations

import pytest

from engine.server import ApiServer
from tests.engine.server.test_bad_requests import call

pytestmark = pytest.mark.slow
MODEL = "SmolLM2-135M-Instruct.Q4_1"
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"],
        "additionalProperties": False}
ASK = "What is the weather in Paris?"
GREEDY = {"temperature": 0}  # anthropic's client has no sampling arguments of its own any more: the body takes it


def test_anthropic_text_and_usage(claude) -> None:  # type: ignore[no-untyped-def]
    message = claude.messages.create(model="claude-any-name", max_tokens=12, system="Be brief.", extra_body=GREEDY,
                                     messages=[{"role": "user", "content": "Say hello."}])
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    assert message.model == MODEL and [b.type for b in message.content] == ["text"]
    assert message.stop_reason in ("end_turn", "max_tokens") and 0 < message.usage.output_tokens <= 12


def test_anthropic_stream_joins_to_the_whole_message(claude) -> None:  # type: ignore[no-untyped-def]
    fields = dict(model="m", max_tokens=24, extra_body=GREEDY, messages=[{"role": "user", "content": "Name three colors."}])
    claude.messages.create(**{**fields, "max_tokens": 1})  # warm-up: both below reuse the same cache
    whole = claude.messages.create(**fields)
    kinds, start = [], None
    with claude.messages.stream(**fields) as stream:
        for event in stream:
            kinds.append(event.type)
            if event.type == "message_start":
                start = event.message.usage.model_dump()
        streamed = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    # message_start already knows how much of the prompt came from the cache, as Anthropic's own stream does
    final = streamed.usage
    assert start is not None and start["cache_read_input_tokens"] == final.cache_read_input_tokens > 0
    assert start["input_tokens"] == final.input_tokens == whole.usage.input_tokens + whole.usage.cache_read_input_tokens \
        - final.cache_read_input_tokens
    assert "content_block_start" in kinds and kinds.index("content_block_stop") > kinds.index("content_block_start")
    assert streamed.content[0].text == whole.content[0].text and streamed.stop_reason == whole.stop_reason
    assert streamed.usage.output_tokens == whole.usage.output_tokens


def test_anthropic_stop_sequence_is_named(claude) -> None:  # type: ignore[no-untyped-def]
    fields = dict(model="m", max_tokens=24, extra_body=GREEDY, messages=[{"role": "user", "content": "Name three colors."}])
    whole = claude.messages.create(**fields).content[0].text
    middle = len(whole) // 2
    stop = whole[middle:middle + 3]  # a piece of the answer itself: it is reached whatever the model says
    assert len(stop) == 3, whole
    cut = whole[:whole.find(stop)]
    message = claude.messages.create(**fields, stop_sequences=["never-written-QQ", stop])
    assert (message.stop_reason, message.stop_sequence) == ("stop_sequence", stop)
    assert message.content[0].text == cut
    with claude.messages.stream(**fields, stop_sequences=[stop]) as stream:
        streamed = stream.get_final_message()
    assert (streamed.stop_reason, streamed.stop_sequence, streamed.content[0].text) == ("stop_sequence", stop, cut)
    plain = claude.messages.create(**{**fields, "max_tokens": 200}, stop_sequences=["never-written-QQ"])
    assert plain.stop_reason in ("end_turn", "max_tokens") and plain.stop_sequence is None


def test_anthropic_errors_in_anthropic_shape(server: ApiServer) -> None:
    status, _, body = call(server.port, "POST", "/v1/messages", {"messages": [{"role": "user", "content": "Hi"}]})
    assert status == 400 and body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in body["error"]["message"]
    status, _, body = call(server.port, "POST", "/v1/messages", {"max_tokens": 5, "messages": [
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "?"}]}]})
    assert status == 400 and "tool_use_id" in body["error"]["message"]


# ---------------------------------------------------------------- the Responses API


def test_responses_text_and_stream(client) -> None:  # type: ignore[no-untyped-def]
    fields = dict(model=MODEL, input="Name three colors.", instructions="Be brief.", max_output_tokens=20,
                  temperature=0)
    # Warm-up with the same request: the next two then find the same prompt in the cache. A first answer read
    # with a colder cache runs other batch shapes, and greedy may part from it where two tokens nearly tie.
    client.responses.create(**fields)
    whole = client.responses.create(**fields)
    assert whole.object == "response" and whole.id.startswith("resp_") and whole.status in ("completed", "incomplete")
    assert [item.type for item in whole.output] == ["message"] and whole.output_text
    with client.responses.stream(**fields) as stream:  # cut at max_output_tokens or not: the last event has it
        events = list(stream)
    kinds = [event.type for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] in ("response.completed", "response.incomplete") and "response.output_text.delta" in kinds
    streamed = events[-1].response  # type: ignore[union-attr]
    assert streamed.status == whole.status and streamed.output_text == whole.output_text


def test_responses_include_logprobs_streamed_or_not(client) -> None:  # type: ignore[no-untyped-def]
    fields = dict(model=MODEL, input="Name three colors.", max_output_tokens=8, temperature=0,
                  include=["message.output_text.logprobs"], top_logprobs=2)
    whole = client.responses.create(**fields).output[0].content[0]
    with client.responses.stream(**fields) as stream:  # cut at 8 tokens or not: the last event has the response
        last = [event for event in stream][-1]
    assert last.type in ("response.completed", "response.incomplete")
    streamed = last.response.output[0].content[0]
    for part in (whole, streamed):  # one entry per token: together they spell the text
        assert part.text and "".join(lp.token for lp in part.logprobs).startswith(part.text)
        assert 0 < len(part.logprobs) <= 8
        assert all(len(lp.top_logprobs) == 2 and lp.logprob <= 0 for lp in part.logprobs)
    assert [lp.token for lp in streamed.logprobs] == [lp.token for lp in whole.logprobs]


def test_responses_refuse_previous_response_id(server: ApiServer) -> None:
    status, _, body = call(server.port, "POST", "/v1/responses", {"input": "Hi", "previous_response_id": "resp_1"})
    assert status == 400 and body["error"]["param"] == "previous_response_id"

"""The translation back: engine events through each API's encoder, read by the real openai and anthropic clients.

Model-free: a hand-written turn (thinking, text, two tool calls, logprobs) goes
through the encoders; the stream's bytes are served to the real clients by an
httpx MockTransport, so what is checked is what those clients make of it.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import httpx2 as httpx  # what the openai and anthropic clients speak (a project dependency)
import pytest
from sse_starlette import ServerSentEvent

from engine.protocol import (
    Event, Logprobs, ReasoningText, Token, TokenLogprob, ToolCall, ToolCallArguments, ToolCallStarted, TurnFinished,
    TurnStats,
)
from engine.server.anthropic_reply import MessageReply
from engine.server.errors import ApiError
from engine.server.responses import Reply
from engine.server.responses_api_reply import ResponseReply

CHAT = "api-1"
STATS = TurnStats(prompt_tokens=30, reused_tokens=10, generated_tokens=20, time_to_first_token_s=0.1,
                  decode_tokens_per_second=50.0, total_s=0.5, reasoning_tokens=6)
CALLS = (ToolCall("call_a", "get_weather", '{"city": "Paris"}'), ToolCall("call_b", "get_time", "{}"))
EVENTS: list[Event] = [
    ReasoningText(CHAT, "The user wants "), ReasoningText(CHAT, "the weather."),
    Token(CHAT, "Let me "), Token(CHAT, "check."),
    Logprobs(CHAT, (TokenLogprob("check", -0.5, top=(("check", -0.5), ("see", -1.2))),)),
    ToolCallStarted(CHAT, 0, "call_a", "get_weather"),
    ToolCallArguments(CHAT, 0, '{"city": '), ToolCallArguments(CHAT, 0, '"Paris"}'),
    ToolCallStarted(CHAT, 1, "call_b", "get_time"), ToolCallArguments(CHAT, 1, "{}"),
]
FINISHED = TurnFinished(CHAT, "tool_calls", STATS, "Let me check.", reasoning="The user wants the weather.",
                        tool_calls=CALLS)


def stream_bytes(encoder: Any, events: list[Event], finished: TurnFinished) -> bytes:
    items = [*encoder.opening(30)]
    for event in events:
        items += encoder.event(event)
    items += encoder.closing(finished)
    return b"".join((item if isinstance(item, ServerSentEvent) else ServerSentEvent(item)).encode() for item in items)


def transport(body: bytes | dict[str, Any], status: int = 200) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        if isinstance(body, dict):
            return httpx.Response(status, json=body)
        return httpx.Response(status, content=body, headers={"content-type": "text/event-stream"})
    return httpx.MockTransport(answer)


def openai_client(body: bytes | dict[str, Any], status: int = 200):  # type: ignore[no-untyped-def]
    import openai

    return openai.OpenAI(base_url="http://test/v1", api_key="x", max_retries=0,
                         http_client=httpx.Client(transport=transport(body, status)))


def anthropic_client(body: bytes | dict[str, Any], status: int = 200):  # type: ignore[no-untyped-def]
    import anthropic

    return anthropic.Anthropic(base_url="http://test", api_key="x", max_retries=0,
                               http_client=httpx.Client(transport=transport(body, status)))


# ---------------------------------------------------------------- OpenAI's chat completions


def test_chat_stream_chunks_as_openai_sends_them() -> None:
    chunks = [json.loads(line[6:]) for line in stream_bytes(Reply("chat", "m"), EVENTS, FINISHED).decode().splitlines()
              if line.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0] == {"index": 0, "id": "call_a", "type": "function",
                        "function": {"name": "get_weather", "arguments": ""}}
    assert calls[1] == {"index": 0, "function": {"arguments": '{"city": '}}
    assert calls[3]["index"] == 1 and calls[3]["function"]["name"] == "get_time"
    assert "".join(d.get("reasoning_content", "") for d in deltas) == FINISHED.reasoning
    assert "".join(d.get("content", "") for d in deltas) == FINISHED.text
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"][0]["finish_reason"]] == ["tool_calls"]
    (logprobs,) = [c["choices"][0]["logprobs"] for c in chunks if c["choices"][0]["logprobs"]]
    assert logprobs["content"][0]["top_logprobs"][1] == {"token": "see", "logprob": -1.2, "bytes": list(b"see")}


def test_the_openai_client_joins_the_streamed_calls_to_the_whole_answer() -> None:
    whole = Reply("chat", "m").complete(FINISHED, [TokenLogprob("check", -0.5)])
    answer = openai_client(whole).chat.completions.create(model="m", messages=[])
    message = answer.choices[0].message
    assert answer.choices[0].finish_reason == "tool_calls" and message.content == "Let me check."
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == \
           [(c.id, c.name, c.arguments) for c in CALLS]
    assert message.model_extra["reasoning_content"] == FINISHED.reasoning
    assert answer.choices[0].logprobs.content[0].logprob == -0.5
    assert answer.usage.completion_tokens_details.reasoning_tokens == 6

    streamed = openai_client(stream_bytes(Reply("chat", "m"), EVENTS, FINISHED))
    with streamed.chat.completions.stream(model="m", messages=[]) as stream:
        final = stream.get_final_completion()
    joined = final.choices[0].message
    assert [(c.id, c.function.name, c.function.arguments) for c in joined.tool_calls] == \
           [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls]
    assert joined.content == message.content and final.choices[0].finish_reason == "tool_calls"


def test_a_plain_answer_has_no_tool_calls_and_no_reasoning_field() -> None:
    plain = TurnFinished(CHAT, "stop", STATS, "Hello.")
    message = Reply("chat", "m").complete(plain, [])["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "Hello.", "refusal": None}
    completion = Reply("completion", "m", text_offset=4).complete(
        plain, [TokenLogprob("Hel", -0.1, top=(("Hel", -0.1),)), TokenLogprob("lo.", -0.2)])
    assert completion["choices"][0]["logprobs"] == {"tokens": ["Hel", "lo."], "token_logprobs": [-0.1, -0.2],
                                                    "top_logprobs": [{"Hel": -0.1}, {}], "text_offset": [4, 7]}


# ---------------------------------------------------------------- Anthropic's messages


def test_the_anthropic_client_reads_the_message_and_its_stream_alike() -> None:
    whole = MessageReply("m").complete(FINISHED, [])
    message = anthropic_client(whole).messages.create(model="m", max_tokens=10, messages=[])
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use", "tool_use"]
    assert message.content[2].input == {"city": "Paris"} and message.content[3].id == "call_b"
    assert message.stop_reason == "tool_use" and message.usage.output_tokens == 20
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens) == (20, 10)

    body = stream_bytes(MessageReply("m"), EVENTS, FINISHED)
    kinds = [line[7:] for line in body.decode().splitlines() if line.startswith("event: ")]
    assert kinds[:3] == ["message_start", "ping", "content_block_start"] and kinds[-2:] == ["message_delta",
                                                                                           "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 4
    with anthropic_client(body).messages.stream(model="m", max_tokens=10, messages=[]) as stream:
        streamed = stream.get_final_message()
    assert [b.type for b in streamed.content] == [b.type for b in message.content]
    assert streamed.content[0].thinking == FINISHED.reasoning and streamed.content[1].text == FINISHED.text
    assert [(b.id, b.name, b.input) for b in streamed.content[2:]] == [(b.id, b.name, b.input)
                                                                       for b in message.content[2:]]
    assert streamed.stop_reason == "tool_use" and streamed.usage.output_tokens == 20


def test_anthropic_errors_have_anthropic_shape() -> None:
    import anthropic

    error = ApiError(400, "'tools[0].name': every tool needs a name.", param="tools[0].name")
    response = MessageReply("m").error_response(error)
    body = json.loads(bytes(response.body))
    assert body == {"type": "error", "error": {"type": "invalid_request_error", "message": error.message}}
    with pytest.raises(anthropic.BadRequestError, match="every tool needs a name"):
        anthropic_client(body, 400).messages.create(model="m", max_tokens=10, messages=[])
    (event,) = MessageReply("m").failure(ApiError(503, "busy"))
    assert event.event == "error" and json.loads(event.data)["error"]["type"] == "overloaded_error"


# ---------------------------------------------------------------- the Responses API


def test_the_openai_client_reads_a_response_and_its_stream_alike() -> None:
    whole = ResponseReply("m").complete(FINISHED, [])
    response = openai_client(whole).responses.create(model="m", input="Hi")
    assert [item.type for item in response.output] == ["reasoning", "message", "function_call", "function_call"]
    assert response.output_text == FINISHED.text and response.status == "completed"
    assert [(i.call_id, i.name, i.arguments) for i in response.output[2:]] == [(c.id, c.name, c.arguments)
                                                                               for c in CALLS]
    body = stream_bytes(ResponseReply("m"), EVENTS, FINISHED)
    events = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    assert kinds.count("response.output_item.added") == kinds.count("response.output_item.done") == 4
    assert kinds.index("response.function_call_arguments.delta") < kinds.index("response.function_call_arguments.done")
    with openai_client(body).responses.stream(model="m", input="Hi") as stream:
        final = stream.get_final_response()
    assert final.output_text == FINISHED.text
    assert [(i.call_id, i.name, i.arguments) for i in final.output if i.type == "function_call"] == \
           [(c.id, c.name, c.arguments) for c in CALLS]


def test_a_response_cut_at_max_output_tokens_is_incomplete() -> None:
    cut = TurnFinished(CHAT, "length", STATS, "Once upon")
    reply = ResponseReply("m")
    assert reply.complete(cut, [])["incomplete_details"] == {"reason": "max_output_tokens"}
    kinds = [json.loads(e.data)["type"] for e in ResponseReply("m").closing(cut)]
    assert kinds == ["response.incomplete"]


def test_a_response_with_logprobs_sends_each_text_delta_with_its_tokens() -> None:
    entries = [TokenLogprob("Let", -0.1, top=(("Let", -0.1),)), TokenLogprob(" me", -0.2, top=((" me", -0.2),)),
               TokenLogprob(" check", -0.3, top=((" check", -0.3), (" see", -1.5)))]
    events: list[Event] = [ReasoningText(CHAT, "Hmm."), Logprobs(CHAT, (TokenLogprob("Hmm", -2.0),)),
                           Token(CHAT, "Let me"), Logprobs(CHAT, tuple(entries[:2])),
                           Token(CHAT, " check"), Logprobs(CHAT, tuple(entries[2:]))]
    finished = TurnFinished(CHAT, "stop", STATS, "Let me check", reasoning="Hmm.")
    body = stream_bytes(ResponseReply("m", logprobs=True), events, finished)
    sent = [json.loads(line[6:]) for line in body.decode().splitlines() if line.startswith("data: ")]
    deltas = [(e["delta"], [lp["token"] for lp in e["logprobs"]]) for e in sent
              if e["type"] == "response.output_text.delta"]
    assert deltas == [("Let me", ["Let", " me"]), (" check", [" check"])]  # the thinking's token is not the text's
    with openai_client(body).responses.stream(model="m", input="Hi") as stream:
        final = stream.get_final_response()
    part = final.output[1].content[0]
    assert final.output_text == "Let me check" and [lp.token for lp in part.logprobs] == ["Let", " me", " check"]
    assert [(t.token, t.logprob) for t in part.logprobs[2].top_logprobs] == [(" check", -0.3), (" see", -1.5)]
    whole = openai_client(ResponseReply("m", logprobs=True).complete(finished, entries)).responses.create(
        model="m", input="Hi")
    assert [lp.logprob for lp in whole.output[1].content[0].logprobs] == [-0.1, -0.2, -0.3]
    assert ResponseReply("m").complete(finished, entries)["output"][1]["content"][0]["logprobs"] == []


def test_a_response_the_engine_could_not_finish_ends_as_failed() -> None:
    reply = ResponseReply("m")
    items = [*reply.opening(30), *reply.event(Token(CHAT, "Once"))]
    items += reply.closing(TurnFinished(CHAT, "error", STATS, "", message="out of memory"))
    sent = [json.loads(item.data) for item in items if isinstance(item, ServerSentEvent)]
    assert [e["type"] for e in sent][-3:] == ["response.content_part.done", "response.output_item.done",
                                              "response.failed"]
    failed = sent[-1]["response"]
    assert failed["status"] == "failed" and failed["error"]["message"] == "out of memory"
    assert failed["output"][0]["content"][0]["text"] == "Once"  # what was written is still there


@pytest.mark.parametrize("make", [lambda: Reply("chat", "m"), lambda: MessageReply("m"), lambda: ResponseReply("m")])
def test_every_stream_ends_with_an_error_event_when_the_engine_fails(make: Callable[[], Any]) -> None:
    failed = TurnFinished(CHAT, "error", STATS, "", message="out of memory")
    text = b"".join((i if isinstance(i, ServerSentEvent) else ServerSentEvent(i)).encode()
                    for i in make().closing(failed)).decode()
    assert "out of memory" in text and "error" in text


def test_models_list_the_templates_capabilities_as_lm_studio_names_them() -> None:
    from engine.server.responses import model_list

    (model, other) = model_list([("m", ("tools", "reasoning", "thinking_switch"), True), ("n", (), False)], 1)["data"]
    assert model["capabilities"] == ["tool_use", "reasoning", "thinking_switch"] and "path" not in model
    assert (model["loaded"], other["id"], other["loaded"], other["capabilities"]) == (True, "n", False, [])
    assert model_list([], 1)["data"] == []

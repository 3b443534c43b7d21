"""OpenAI's response objects, from the engine's events and TurnFinished: completions, stream chunks, usage.

The engine's finish reasons become OpenAI's: stop, length and tool_calls as they
are; a full context is `length` with a note; a turn cancelled for the server's
own reasons (shutting down, the model changed in the window) is `stop` with a
note. A note rides in the choice as the extra field `note`; OpenAI's clients
keep fields they do not know. Thinking goes in `reasoning_content` (llama-server's
`--reasoning-format deepseek`), never in `content`.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from starlette.responses import Response

from engine.protocol import (
    Event, Logprobs, ReasoningText, Token, TokenLogprob, ToolCall, ToolCallArguments, ToolCallStarted, TurnFinished,
)
from engine.server.errors import ApiError, error_body
from engine.server.web_tools import ServerToolRan

Kind = Literal["chat", "completion"]
DONE = "[DONE]"


def data(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


@dataclass
class Reply:
    """One request's answer as the client sees it; `id` and `created` stay the same over a stream."""

    kind: Kind
    model: str
    id: str = ""
    created: int = field(default_factory=lambda: int(time.time()))
    include_usage: bool = False  # a stream's last chunk: the usage (stream_options.include_usage)
    text_offset: int = 0  # plain completions' logprobs count characters from here (the prompt's length)
    server_steps: list[ServerToolRan] = field(default_factory=list)  # the calls the server ran (its own tools)

    def __post_init__(self) -> None:
        if not self.id:
            self.id = ("chatcmpl-" if self.kind == "chat" else "cmpl-") + uuid.uuid4().hex

    @property
    def object(self) -> str:
        return "chat.completion" if self.kind == "chat" else "text_completion"

    def _envelope(self, object_name: str, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": self.id, "object": object_name, "created": self.created, "model": self.model,
                "system_fingerprint": None, "choices": choices}

    # ------------------------------------------------------------ whole answers

    def complete(self, finished: TurnFinished, logprobs: list[TokenLogprob]) -> dict[str, Any]:
        reason, note = finish_reason(finished)
        choice: dict[str, Any] = {"index": 0, "finish_reason": reason, "logprobs": self._logprobs(logprobs)}
        if self.kind == "chat":
            choice["message"] = chat_message(finished)
            if self.server_steps:
                choice["message"]["server_tool_calls"] = [step.as_json() for step in self.server_steps]
        else:
            choice["text"] = finished.text
        if note:
            choice["note"] = note
        return {**self._envelope(self.object, [choice]), "usage": usage(finished)}

    def error_response(self, error: ApiError) -> Response:
        return error.response()

    def _logprobs(self, entries: list[TokenLogprob] | tuple[TokenLogprob, ...]) -> dict[str, Any] | None:
        if not entries:
            return None
        if self.kind == "chat":
            return {"content": [chat_logprob(entry) for entry in entries], "refusal": None}
        offsets, offset = [], self.text_offset
        for entry in entries:
            offsets.append(offset)
            offset += len(entry.token)
        self.text_offset = offset
        return {"tokens": [e.token for e in entries], "token_logprobs": [e.logprob for e in entries],
                "top_logprobs": [dict(e.top) for e in entries], "text_offset": offsets}

    # ------------------------------------------------------------ streams

    def _chunk(self, delta: dict[str, Any] | None, reason: str | None = None, note: str = "",
               logprobs: dict[str, Any] | None = None, text: str = "") -> str:
        choice: dict[str, Any] = {"index": 0, "finish_reason": reason, "logprobs": logprobs}
        if self.kind == "chat":
            choice["delta"] = delta or {}
            object_name = "chat.completion.chunk"
        else:
            choice["text"] = text
            object_name = "text_completion"
        if note:
            choice["note"] = note
        return data(self._envelope(object_name, [choice]))

    def opening(self, prompt_tokens: int = 0, cached_tokens: int = 0) -> list[str]:
        return [self._chunk({"role": "assistant", "content": ""})]

    def record_step(self, step: ServerToolRan) -> None:
        self.server_steps.append(step)

    def event(self, event: Event | ServerToolRan) -> list[str]:
        if isinstance(event, ServerToolRan):  # a step, whole, between two of the model's answers
            return [self._chunk({"server_tool_calls": [event.as_json()]})]
        if isinstance(event, Token) and event.text:
            return [self._chunk({"content": event.text}, text=event.text)]
        if self.kind != "chat":
            return [self._chunk(None, logprobs=self._logprobs(event.entries))] if isinstance(event, Logprobs) else []
        if isinstance(event, ReasoningText) and event.text:
            return [self._chunk({"reasoning_content": event.text})]
        if isinstance(event, ToolCallStarted):  # as OpenAI: the whole name first, then the arguments in pieces
            return [self._chunk({"tool_calls": [{"index": event.index, "id": event.call_id, "type": "function",
                                                 "function": {"name": event.name, "arguments": ""}}]})]
        if isinstance(event, ToolCallArguments) and event.text:
            return [self._chunk({"tool_calls": [{"index": event.index, "function": {"arguments": event.text}}]})]
        if isinstance(event, Logprobs) and event.entries:
            return [self._chunk({}, logprobs=self._logprobs(event.entries))]
        return []

    def closing(self, finished: TurnFinished) -> list[str]:
        if finished.reason == "error":
            return [data(error_body(500, finished.message or "The engine failed on this request.")), DONE]
        reason, note = finish_reason(finished)  # a cancelled stream still ends with a reason, and a note why
        last = [self._chunk(None, reason, note)]
        if self.include_usage:
            object_name = "chat.completion.chunk" if self.kind == "chat" else "text_completion"
            last.append(data({**self._envelope(object_name, []), "usage": usage(finished)}))
        return [*last, DONE]

    def failure(self, error: ApiError) -> list[str]:
        return [data(error.body()), DONE]


def chat_message(finished: TurnFinished) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": finished.text, "refusal": None}
    if finished.reasoning:
        message["reasoning_content"] = finished.reasoning
    if finished.tool_calls:
        message["content"] = finished.text or None  # as OpenAI: no text beside the calls is null
        message["tool_calls"] = [tool_call(call) for call in finished.tool_calls]
    return message


def tool_call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


def chat_logprob(entry: TokenLogprob) -> dict[str, Any]:
    return {"token": entry.token, "logprob": entry.logprob, "bytes": token_bytes(entry.token, entry.token_bytes),
            "top_logprobs": [{"token": token, "logprob": logprob, "bytes": token_bytes(token)}
                             for token, logprob in entry.top]}


def token_bytes(token: str, given: tuple[int, ...] = ()) -> list[int]:
    return list(given) if given else list(token.encode("utf-8"))


def finish_reason(finished: TurnFinished) -> tuple[str, str]:
    """OpenAI's finish reason and, where the engine's own says more, a note for a person."""
    if finished.reason in ("stop", "length", "tool_calls"):
        return finished.reason, ""
    if finished.reason == "context_full":
        return "length", finished.message or "The context is full: the answer was cut here."
    return "stop", finished.message or "The answer was stopped before its end."


def usage(finished: TurnFinished) -> dict[str, Any]:
    stats = finished.stats
    return {"prompt_tokens": stats.prompt_tokens, "completion_tokens": stats.generated_tokens,
            "total_tokens": stats.prompt_tokens + stats.generated_tokens,
            "prompt_tokens_details": {"cached_tokens": stats.reused_tokens},
            "completion_tokens_details": {"reasoning_tokens": stats.reasoning_tokens}}


# LM Studio's names for what a model can do, from what the engine found in the chat template
CAPABILITY_NAMES = {"tools": "tool_use", "reasoning": "reasoning"}


ListedModel = tuple[str, tuple[str, ...], bool]  # (id, capabilities, loaded)


def model_list(listed: list[ListedModel], created: int) -> dict[str, Any]:
    """The id, what the model can do and whether it is loaded; not where it lies on this computer: that is
    not the clients' business."""
    return {"object": "list", "data": [
        {"id": model_id, "object": "model", "created": created, "owned_by": "hearth",
         "capabilities": [CAPABILITY_NAMES.get(name, name) for name in capabilities], "loaded": loaded}
        for model_id, capabilities, loaded in listed]}

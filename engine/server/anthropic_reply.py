"""Anthropic's Messages API answer: a message of content blocks, or its stream of named events.

The engine's parts become blocks in the order they come: thinking (ReasoningText),
text (Token), tool_use (ToolCallStarted, then its arguments as input_json_delta).
A stream is message_start, ping, per block content_block_start / _delta / _stop,
then message_delta (stop_reason, usage) and message_stop. An answer cut by one of the request's
stop_sequences says "stop_sequence" and which one (the engine adds the model's own end markers to the
stop strings: those stay "end_turn"). Errors have
Anthropic's shape, in the body and in the stream's `error` event.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from sse_starlette import ServerSentEvent
from starlette.responses import Response

from engine.protocol import Event, ReasoningText, Token, TokenLogprob, ToolCallArguments, ToolCallStarted, TurnFinished
from engine.server.anthropic_request import input_object
from engine.server.errors import ApiError

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "context_full": "max_tokens", "tool_calls": "tool_use"}


def sse(payload: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(json.dumps(payload, ensure_ascii=False, separators=(",", ":")), event=payload["type"])


def stop_reason(finished: TurnFinished, stop_sequences: tuple[str, ...] = ()) -> tuple[str, str | None]:
    """The message's stop_reason and stop_sequence."""
    if finished.reason == "stop" and finished.stop_string and finished.stop_string in stop_sequences:
        return "stop_sequence", finished.stop_string
    return STOP_REASONS.get(finished.reason, "end_turn"), None


def anthropic_usage(finished: TurnFinished) -> dict[str, Any]:
    stats = finished.stats
    return {"input_tokens": stats.prompt_tokens - stats.reused_tokens, "output_tokens": stats.generated_tokens,
            "cache_read_input_tokens": stats.reused_tokens, "cache_creation_input_tokens": 0}


@dataclass
class MessageReply:
    """One /v1/messages answer; its stream remembers which block is open."""

    model: str
    stop_sequences: tuple[str, ...] = ()  # the request's
    id: str = field(default_factory=lambda: "msg_" + uuid.uuid4().hex)
    _open: str = ""  # the type of the block being streamed: "", "thinking", "text", "tool_use"
    _blocks: int = 0  # blocks started so far (the next one's index)

    def _message(self, content: list[dict[str, Any]], reason: tuple[str, str | None] | None,
                 usage: dict[str, Any]) -> dict[str, Any]:
        stop, sequence = reason or (None, None)
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": content,
                "stop_reason": stop, "stop_sequence": sequence, "usage": usage}

    # ------------------------------------------------------------ whole answers

    def complete(self, finished: TurnFinished, logprobs: list[TokenLogprob]) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if finished.reasoning:
            content.append({"type": "thinking", "thinking": finished.reasoning, "signature": ""})
        if finished.text or not finished.tool_calls:
            content.append({"type": "text", "text": finished.text})
        content.extend({"type": "tool_use", "id": call.id, "name": call.name, "input": input_object(call.arguments)}
                       for call in finished.tool_calls)
        return self._message(content, stop_reason(finished, self.stop_sequences), anthropic_usage(finished))

    def error_response(self, error: ApiError) -> Response:
        return error.response(anthropic=True)

    # ------------------------------------------------------------ streams

    def opening(self, prompt_tokens: int = 0, cached_tokens: int = 0) -> list[ServerSentEvent | str]:
        usage = {"input_tokens": prompt_tokens - cached_tokens, "output_tokens": 0,
                 "cache_read_input_tokens": cached_tokens, "cache_creation_input_tokens": 0}
        return [sse({"type": "message_start", "message": self._message([], None, usage)}), sse({"type": "ping"})]

    def event(self, event: Event) -> list[ServerSentEvent | str]:
        if isinstance(event, ReasoningText) and event.text:
            opened = [] if self._open == "thinking" else self._start(
                "thinking", {"type": "thinking", "thinking": "", "signature": ""})
            return [*opened, self._delta({"type": "thinking_delta", "thinking": event.text})]
        if isinstance(event, Token) and event.text:
            opened = [] if self._open == "text" else self._start("text", {"type": "text", "text": ""})
            return [*opened, self._delta({"type": "text_delta", "text": event.text})]
        if isinstance(event, ToolCallStarted):  # every call is a block of its own
            return self._start("tool_use", {"type": "tool_use", "id": event.call_id, "name": event.name, "input": {}})
        if isinstance(event, ToolCallArguments) and event.text and self._open == "tool_use":
            return [self._delta({"type": "input_json_delta", "partial_json": event.text})]
        return []

    def _start(self, kind: str, block: dict[str, Any]) -> list[ServerSentEvent | str]:
        """Close the open block, if any, and open the next."""
        events = self._close()
        events.append(sse({"type": "content_block_start", "index": self._blocks, "content_block": block}))
        self._open, self._blocks = kind, self._blocks + 1
        return events

    def _close(self) -> list[ServerSentEvent | str]:
        if not self._open:
            return []
        self._open = ""
        return [sse({"type": "content_block_stop", "index": self._blocks - 1})]

    def _delta(self, delta: dict[str, Any]) -> ServerSentEvent:
        return sse({"type": "content_block_delta", "index": self._blocks - 1, "delta": delta})

    def closing(self, finished: TurnFinished) -> list[ServerSentEvent | str]:
        if finished.reason == "error":
            return self.failure(ApiError(500, finished.message or "The engine failed on this request."))
        events = self._close()
        usage = anthropic_usage(finished)
        reason, sequence = stop_reason(finished, self.stop_sequences)
        return [*events, sse({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": sequence},
                              "usage": usage}),
                sse({"type": "message_stop"})]

    def failure(self, error: ApiError) -> list[ServerSentEvent | str]:
        return [sse({"type": "error", "error": error.anthropic_body()["error"]})]

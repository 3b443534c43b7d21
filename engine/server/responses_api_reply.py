"""The Responses API's answer: a response object with output items, or its stream of typed events.

The engine's parts become output items in the order they come: `reasoning`
(ReasoningText), `message` with one output_text part (Token), `function_call`
(ToolCallStarted and its argument fragments). A stream is response.created,
response.in_progress, per item output_item.added, its deltas and its .done
events, output_item.done, then response.completed (or response.incomplete when
the answer was cut at max_output_tokens), or response.failed when the engine
could not finish it. Every event has a sequence_number. Where the request
included "message.output_text.logprobs", each output_text delta waits for its
tokens' log-probabilities (they come just after the text) and carries them.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from sse_starlette import ServerSentEvent
from starlette.responses import Response

from engine.protocol import (
    Event, Logprobs, ReasoningText, Token, TokenLogprob, ToolCallArguments, ToolCallStarted, TurnFinished,
)
from engine.server.errors import ApiError
from engine.server.responses import chat_logprob
from engine.server.web_tools import ServerToolRan
from engine.tools.builtin.web_search import NAME as WEB_SEARCH


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


@dataclass
class ResponseReply:
    """One /v1/responses answer; `echo` holds the request's settings the response object repeats."""

    model: str
    echo: dict[str, Any] = field(default_factory=dict)
    id: str = field(default_factory=lambda: _id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))
    logprobs: bool = False  # the request included the output text's log-probabilities
    _items: list[dict[str, Any]] = field(default_factory=list)  # output so far; the last may still be open
    _open: bool = False
    _sequence: int = 0
    _unsent: str = ""  # the open message's text not yet sent: it waits for its log-probabilities
    _message_logprobs: list[dict[str, Any]] = field(default_factory=list)  # the open message's, so far
    _steps: list[dict[str, Any]] = field(default_factory=list)  # web_search_call items: the server's own calls

    def _response(self, status: str, output: list[dict[str, Any]], finished: TurnFinished | None,
                  error: dict[str, Any] | None = None) -> dict[str, Any]:
        incomplete = finished is not None and finished.reason in ("length", "context_full")
        return {"id": self.id, "object": "response", "created_at": self.created_at, "model": self.model,
                "status": "incomplete" if incomplete else status, "output": output, "error": error,
                "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "temperature": None, "top_p": None,
                "instructions": None, "metadata": {}, "store": False, "previous_response_id": None,
                **self.echo, "usage": usage(finished) if finished is not None else None}

    # ------------------------------------------------------------ whole answers

    def record_step(self, step: ServerToolRan) -> None:
        self._steps.append(step_item(step))

    def complete(self, finished: TurnFinished, logprobs: list[TokenLogprob]) -> dict[str, Any]:
        output = list(self._steps)  # the server's own calls came first, each a round before the answer
        if finished.reasoning:
            output.append(reasoning_item(finished.reasoning))
        if finished.text or not finished.tool_calls:
            output.append(message_item(finished.text))
            if self.logprobs:
                output[-1]["content"][0]["logprobs"] = [chat_logprob(entry) for entry in logprobs]
        output.extend(call_item(_id("fc"), call.id, call.name, call.arguments) for call in finished.tool_calls)
        return self._response("completed", output, finished)

    def error_response(self, error: ApiError) -> Response:
        return error.response()

    # ------------------------------------------------------------ streams

    def _sse(self, kind: str, **payload: Any) -> ServerSentEvent:
        body = {"type": kind, "sequence_number": self._sequence, **payload}
        self._sequence += 1
        return ServerSentEvent(json.dumps(body, ensure_ascii=False, separators=(",", ":")), event=kind)

    def opening(self, prompt_tokens: int = 0, cached_tokens: int = 0) -> list[ServerSentEvent | str]:
        started = self._response("in_progress", [], None)
        return [self._sse("response.created", response=started), self._sse("response.in_progress", response=started)]

    def event(self, event: Event | ServerToolRan) -> list[ServerSentEvent | str]:
        if isinstance(event, ServerToolRan):  # whole when it comes: added and done at once
            item = step_item(event)
            opened = self._start({**item, "status": "in_progress"})
            self._items[-1] = item
            return [*opened, self._sse("response.web_search_call.completed", **self._where()), *self._close()]
        if isinstance(event, ReasoningText) and event.text:
            opened = self._start(reasoning_item("", "in_progress")) if self._kind() != "reasoning" else []
            self._items[-1]["content"][0]["text"] += event.text
            return [*opened, self._sse("response.reasoning_text.delta", **self._where(), content_index=0,
                                       delta=event.text)]
        if isinstance(event, Token) and event.text:
            opened = self._start(message_item("", "in_progress")) if self._kind() != "message" else []
            if opened:
                opened.append(self._sse("response.content_part.added", **self._where(), content_index=0,
                                        part=output_text("")))
            self._items[-1]["content"][0]["text"] += event.text
            if self.logprobs:  # sent with its log-probabilities, in the Logprobs event that follows
                self._unsent += event.text
                return opened
            return [*opened, self._text_delta(event.text, [])]
        if isinstance(event, Logprobs):
            entries = [chat_logprob(entry) for entry in event.entries]
            if not self._unsent or self._kind() != "message":  # thinking's or a call's tokens: not the text's
                return []
            self._message_logprobs += entries
            text, self._unsent = self._unsent, ""
            return [self._text_delta(text, entries)]
        if isinstance(event, ToolCallStarted):
            return self._start(call_item(_id("fc"), event.call_id, event.name, "", "in_progress"))
        if isinstance(event, ToolCallArguments) and event.text and self._kind() == "function_call":
            self._items[-1]["arguments"] += event.text
            return [self._sse("response.function_call_arguments.delta", **self._where(), delta=event.text)]
        return []

    def _text_delta(self, text: str, logprobs: list[dict[str, Any]]) -> ServerSentEvent:
        return self._sse("response.output_text.delta", **self._where(), content_index=0, delta=text, logprobs=logprobs)

    def _kind(self) -> str:
        return str(self._items[-1]["type"]) if self._open else ""

    def _where(self) -> dict[str, Any]:
        return {"item_id": self._items[-1]["id"], "output_index": len(self._items) - 1}

    def _start(self, item: dict[str, Any]) -> list[ServerSentEvent | str]:
        events = self._close()
        self._items.append(item)
        self._open = True
        announced = {**item, "content": []} if "content" in item else item  # its parts are announced one by one
        return [*events, self._sse("response.output_item.added", output_index=len(self._items) - 1, item=announced)]

    def _close(self) -> list[ServerSentEvent | str]:
        """The open item's .done events, in the order OpenAI sends them."""
        if not self._open:
            return []
        self._open = False
        item, where = self._items[-1], self._where()
        item["status"] = "completed"
        events: list[ServerSentEvent | str] = []
        if item["type"] == "message":
            text, logprobs, self._message_logprobs = item["content"][0]["text"], self._message_logprobs, []
            if self._unsent:  # text whose log-probabilities never came (the turn ended with it)
                events.append(self._text_delta(self._unsent, []))
                self._unsent = ""
            item["content"][0]["logprobs"] = logprobs
            events += [self._sse("response.output_text.done", **where, content_index=0, text=text, logprobs=logprobs),
                       self._sse("response.content_part.done", **where, content_index=0, part=item["content"][0])]
        elif item["type"] == "web_search_call":
            pass  # nothing streamed inside it
        elif item["type"] == "reasoning":
            events.append(self._sse("response.reasoning_text.done", **where, content_index=0,
                                    text=item["content"][0]["text"]))
        else:
            events.append(self._sse("response.function_call_arguments.done", **where, name=item["name"],
                                    arguments=item["arguments"]))
        return [*events, self._sse("response.output_item.done", output_index=where["output_index"], item=item)]

    def closing(self, finished: TurnFinished) -> list[ServerSentEvent | str]:
        if finished.reason == "error":
            return self.failure(ApiError(500, finished.message or "The engine failed on this request."))
        events = self._close()
        response = self._response("completed", self._items, finished)
        kind = "response.completed" if response["status"] == "completed" else "response.incomplete"
        return [*events, self._sse(kind, response=response)]

    def failure(self, error: ApiError) -> list[ServerSentEvent | str]:
        """As OpenAI ends a response it could not finish: response.failed, the error in the response."""
        body = error.body()["error"]
        assert isinstance(body, dict)
        events = self._close()
        failed = self._response("failed", self._items, None, {"code": body["code"] or "server_error",
                                                               "message": body["message"]})
        return [*events, self._sse("response.failed", response=failed)]


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def message_item(text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "message", "id": _id("msg"), "status": status, "role": "assistant", "content": [output_text(text)]}


def reasoning_item(text: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "reasoning", "id": _id("rs"), "status": status, "summary": [],
            "content": [{"type": "reasoning_text", "text": text}]}


def call_item(item_id: str, call_id: str, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": arguments,
            "status": status}


def step_item(step: ServerToolRan) -> dict[str, Any]:
    """A call the server ran, as the Responses API shows its hosted search: a web_search_call item whose action
    is a search (web_search) or the opening of a page (fetch_page); what it gave rides along in `output`."""
    try:
        arguments = json.loads(step.call.arguments)
    except ValueError:
        arguments = {}
    arguments = arguments if isinstance(arguments, dict) else {}
    action = ({"type": "search", "query": arguments.get("query", "")} if step.call.name == WEB_SEARCH else
              {"type": "open_page", "url": arguments.get("url", "")})
    return {"type": "web_search_call", "id": "ws_" + step.call.id.removeprefix("call_"), "status": "completed",
            "action": action, "output": step.result.text, "is_error": step.result.is_error,
            "sources": list(step.result.sources)}


def usage(finished: TurnFinished) -> dict[str, Any]:
    stats = finished.stats
    return {"input_tokens": stats.prompt_tokens, "input_tokens_details": {"cached_tokens": stats.reused_tokens},
            "output_tokens": stats.generated_tokens,
            "output_tokens_details": {"reasoning_tokens": stats.reasoning_tokens},
            "total_tokens": stats.prompt_tokens + stats.generated_tokens}

"""One turn as one streaming chat completion: retries before the first token only, SSE read robustly.

`stream_turn` runs on the remote engine's asyncio loop and reports what happens
through `deliver` as plain deltas (Answering, Piece, Usage, Ended); the engine
thread turns them into protocol events. What it copes with:
- 408, 429, 5xx and a refused connection before the answer starts: retried with
  backoff (a server's Retry-After honoured); once the server answered 200, never;
- keep-alive comments and blank or garbage lines: skipped;
- `data: {"error": ...}` mid-stream: the turn ends as an error with the server's words;
- a stream that ends without `[DONE]` and without a finish reason, a dropped
  connection, or silence after the first token longer than `stall_timeout_s`:
  the turn ends `interrupted`, with why; the text so far stays with the engine;
- a slow first token: only `first_token_timeout_s` (minutes) ends the wait.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Union

import httpx2

from engine.images import data_url
from engine.protocol import ChatMessage, FinishReason, Submit
from engine.remote.errors import (
    RETRY_STATUSES, base_url, endpoint, error_text, explain_status, explain_transport, headers, is_refused, looks_like_html,
)

log = logging.getLogger(__name__)
BACKOFF_S = (0.5, 1.0, 2.0, 4.0)
MAX_RETRY_AFTER_S = 30.0


@dataclass(frozen=True)
class Connection:
    url: str
    model: str
    api_key: str = field(default="", repr=False)
    connect_timeout_s: float = 10.0
    first_token_timeout_s: float = 600.0
    stall_timeout_s: float = 120.0
    backoff_s: tuple[float, ...] = BACKOFF_S  # one wait per retry


@dataclass(frozen=True)
class Answering:
    """The server took the request (200): retrying is over; latency_s is its time to answer."""

    latency_s: float


@dataclass(frozen=True)
class Piece:
    text: str
    reasoning: bool = False


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Ended:
    reason: FinishReason
    message: str = ""


Delta = Union[Answering, Piece, Usage, Ended]
Deliver = Callable[[Delta], None]
Sleep = Callable[[float], Awaitable[None]]


def request_body(model: str, submit: Submit) -> tuple[str, dict[str, Any]]:
    """The endpoint and JSON body for a turn: the tab's sampling, plus extensions llama-server and vLLM read."""
    sampling = submit.sampling
    body: dict[str, Any] = {"model": model, "stream": True, "stream_options": {"include_usage": True},
                            "max_tokens": sampling.max_new_tokens, "temperature": sampling.temperature,
                            "top_p": sampling.top_p, "top_k": sampling.top_k, "min_p": sampling.min_p,
                            "repeat_penalty": sampling.repeat_penalty, "repetition_penalty": sampling.repeat_penalty}
    if sampling.frequency_penalty or sampling.presence_penalty:
        body.update(frequency_penalty=sampling.frequency_penalty, presence_penalty=sampling.presence_penalty)
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.stop:
        body["stop"] = list(sampling.stop)
    if sampling.ignore_eos:  # the benchmark: every request runs to max_tokens (vLLM and llama-server names)
        body.update(ignore_eos=True, min_tokens=sampling.max_new_tokens)
    if submit.prompt is not None:
        return "completions", {**body, "prompt": submit.prompt}
    return "chat/completions", {**body, "messages": [_message(m) for m in submit.messages]}


def _message(message: ChatMessage) -> dict[str, Any]:
    """A chat message as OpenAI's API spells it; pictures as image_url parts with data: URLs, after the text."""
    if not message.images:
        return {"role": message.role, "content": message.content}
    parts: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    parts += [{"type": "image_url", "image_url": {"url": data_url(image)}} for image in message.images]
    return {"role": message.role, "content": parts}


async def stream_turn(client: httpx2.AsyncClient, connection: Connection, submit: Submit, deliver: Deliver,
                      sleep: Sleep = asyncio.sleep) -> None:
    path, body = request_body(connection.model, submit)
    url = endpoint(connection.url, path)
    for attempt in range(len(connection.backoff_s) + 1):
        retry_in = await _attempt(client, connection, url, body, deliver, last=attempt == len(connection.backoff_s))
        if retry_in is None:
            return
        await sleep(retry_in if retry_in > 0 else connection.backoff_s[attempt])


async def _attempt(client: httpx2.AsyncClient, connection: Connection, url: str, body: dict[str, Any],
                   deliver: Deliver, last: bool) -> float | None:
    """One request; the seconds to wait before retrying (0: the usual backoff), or None when the turn is over."""
    started = time.perf_counter()
    request = client.build_request("POST", url, json=body, headers=headers(connection.api_key))
    try:
        response = await asyncio.wait_for(client.send(request, stream=True), connection.first_token_timeout_s)
    except asyncio.TimeoutError:
        deliver(Ended("error", f"{base_url(url)} took the request but sent nothing for "
                               f"{connection.first_token_timeout_s:g} s. It may be overloaded or stuck."))
        return None
    except httpx2.HTTPError as error:
        if not last and is_refused(error):
            return 0.0
        deliver(Ended("error", explain_transport(error, url)))
        return None
    try:
        if response.status_code != 200:
            text = (await response.aread()).decode("utf-8", "replace")
            if not last and response.status_code in RETRY_STATUSES:
                return _retry_after(response)
            deliver(Ended("error", explain_status(response.status_code, response.headers.get("content-type", ""),
                                                  text, url)))
            return None
        deliver(Answering(time.perf_counter() - started))
        await _read(response, connection, url, deliver)
        return None
    finally:
        await response.aclose()


def _retry_after(response: httpx2.Response) -> float:
    try:
        return min(max(float(response.headers.get("retry-after", "0")), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:  # an HTTP date: the usual backoff will do
        return 0.0


async def _read(response: httpx2.Response, connection: Connection, url: str, deliver: Deliver) -> None:
    content_type = response.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type == "application/json":  # a server that ignored stream=true: one whole completion
        text = (await response.aread()).decode("utf-8", "replace")
        _whole(text, url, deliver)
        return
    if content_type != "text/event-stream":
        text = (await response.aread()).decode("utf-8", "replace")[:2000]
        deliver(Ended("error", explain_status(200, content_type, text, url) if looks_like_html(content_type, text)
                      else f"{base_url(url)} did not stream server-sent events (it sent {content_type or 'no type'})."))
        return
    await _read_events(response, connection, url, deliver)


async def _read_events(response: httpx2.Response, connection: Connection, url: str, deliver: Deliver) -> None:
    events = aiter(httpx2.EventSource(response))
    finish: str | None = None
    tokens = 0
    while True:
        timeout = connection.stall_timeout_s if tokens else connection.first_token_timeout_s
        try:
            event = await asyncio.wait_for(anext(events), timeout)
        except StopAsyncIteration:
            break
        except asyncio.TimeoutError:
            deliver(Ended("interrupted", f"{base_url(url)} sent nothing for {timeout:g} s, so the answer was "
                                         f"taken as cut off. What arrived is kept; Regenerate to try again."))
            return
        except httpx2.HTTPError as error:
            deliver(Ended("interrupted", f"The connection to {base_url(url)} was lost mid-answer "
                                         f"({error or type(error).__name__}). What arrived is kept; "
                                         f"Regenerate to try again."))
            return
        data = event.data.strip()
        if data == "[DONE]":
            deliver(Ended(_finish_reason(finish)))
            return
        chunk = _json(data)
        if chunk is None:
            continue
        if "error" in chunk:
            deliver(Ended("error", f"The server reported an error: {error_text(data) or data[:300]}"))
            return
        found, pieces = _chunk(chunk, deliver)
        finish, tokens = found or finish, tokens + pieces
    if finish is not None:  # a server that says it is done but leaves out [DONE]: the answer is whole
        deliver(Ended(_finish_reason(finish)))
    else:
        deliver(Ended("interrupted", f"The stream from {base_url(url)} ended before the answer was finished "
                                     f"(no finish reason, no [DONE]). What arrived is kept; Regenerate to try again."))


def _json(data: str) -> dict[str, Any] | None:
    if not data:
        return None
    try:
        chunk = json.loads(data)
    except ValueError:
        log.warning("skipped a line that is not JSON in a remote stream: %.80r", data)
        return None
    return chunk if isinstance(chunk, dict) else None


def _chunk(chunk: dict[str, Any], deliver: Deliver) -> tuple[str | None, int]:
    """Hand on a chunk's text and thinking; its finish reason and how many pieces it held."""
    usage = chunk.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        deliver(Usage(int(usage.get("prompt_tokens") or 0), usage["completion_tokens"]))
    choices = chunk.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None, 0
    choice = choices[0]
    delta = _dict(choice.get("delta"))
    pieces = 0
    thinking = delta.get("reasoning_content") or delta.get("reasoning")
    if isinstance(thinking, str) and thinking:
        deliver(Piece(thinking, reasoning=True))
        pieces += 1
    text = delta.get("content") if "delta" in choice else choice.get("text")
    if isinstance(text, str) and text:
        deliver(Piece(text))
        pieces += 1
    reason = choice.get("finish_reason")
    return (reason if isinstance(reason, str) else None), pieces


def _whole(text: str, url: str, deliver: Deliver) -> None:
    chunk = _json(text)
    if chunk is None or not isinstance(chunk.get("choices"), list) or not chunk["choices"]:
        deliver(Ended("error", f"{base_url(url)} answered with JSON that is not a chat completion."))
        return
    choice = chunk["choices"][0] if isinstance(chunk["choices"][0], dict) else {}
    message = _dict(choice.get("message"))
    thinking = message.get("reasoning_content") or message.get("reasoning")
    if isinstance(thinking, str) and thinking:
        deliver(Piece(thinking, reasoning=True))
    content = message.get("content") if message else choice.get("text")
    if isinstance(content, str) and content:
        deliver(Piece(content))
    _chunk({"usage": chunk.get("usage")}, deliver)
    deliver(Ended(_finish_reason(choice.get("finish_reason") or "stop")))


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _finish_reason(reason: str | None) -> FinishReason:
    return "length" if reason == "length" else "stop"

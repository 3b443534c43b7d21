"""A small OpenAI-style server on 127.0.0.1 that misbehaves on request, for what real servers do only sometimes.

The last user message names the scenario ("scenario: missing-done", ...); any
other message gets a well-formed stream of WORDS. Responses are written by hand
over HTTP/1.1 with chunked encoding, so a dropped connection (no closing chunk)
differs from a stream that ended cleanly without [DONE].
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

WORDS = ("Hello", " from", " the", " fake", " server", ".")
MODELS = ("fake-small", "fake-large")
POLL_S = 0.02  # how often serve_forever looks for shutdown(): its default 0.5 s is every test's teardown


def chunk(content: str = "", finish: str | None = None, **delta: str) -> dict[str, Any]:
    if content:
        delta = {**delta, "content": content}
    return {"id": "c1", "object": "chat.completion.chunk", "model": MODELS[0],
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


@dataclass
class Record:
    """What the server saw: each request's path, headers and body; how often a scenario was asked for."""

    requests: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    closed_early: int = 0  # streams whose client went away before the end


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if not self._authorized():
            return
        if self.path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": m, "object": "model", "max_model_len": 2048}
                                                        for m in MODELS]})
        elif self.path.startswith("/html"):
            self._send(200, "text/html", b"<!DOCTYPE html><html><body>Router login</body></html>")
        else:
            self._json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        self.server.record.requests.append((self.path, dict(self.headers), body))
        if not self._authorized():
            return
        user = [m["content"] for m in body.get("messages", []) if m["role"] == "user"]
        scenario = user[-1].split("scenario: ", 1)[1].strip() if user and "scenario: " in user[-1] else "normal"
        counts = self.server.record.counts
        counts[scenario] = counts.get(scenario, 0) + 1
        SCENARIOS.get(scenario, normal)(self, counts[scenario])

    def _authorized(self) -> bool:
        key = self.server.api_key
        if key and self.headers.get("authorization") != f"Bearer {key}":
            self._json(401, {"error": {"message": "Invalid API key", "type": "invalid_request_error"}})
            return False
        return True

    # ------------------------------------------------------------ writing

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, data: object) -> None:
        self._send(status, "application/json", json.dumps(data).encode())

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def raw(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def event(self, data: object) -> None:
        self.raw(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")

    def end(self, done: bool = True) -> None:
        if done:
            self.event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def drop(self) -> None:
        """Close the socket mid-stream: no closing chunk, as a server that died."""
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(2)


def words(handler: Handler, pause: float = 0.0) -> None:
    for word in WORDS:
        handler.event(chunk(word))
        time.sleep(pause)


def normal(handler: Handler, _: int) -> None:
    handler.start_stream()
    handler.event(chunk(role="assistant"))
    words(handler)
    handler.event(chunk(finish="stop"))
    handler.event({"id": "c1", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": len(WORDS)}})
    handler.end()


def slow(handler: Handler, _: int) -> None:
    """A word every 50 ms, 400 words: long enough to be stopped halfway."""
    handler.start_stream()
    try:
        for index in range(400):
            handler.event(chunk(f" w{index}"))
            time.sleep(0.05)
        handler.event(chunk(finish="length"))
        handler.end()
    except OSError:  # the client closed the stream: what Stop should do
        handler.server.record.closed_early += 1


def missing_done(handler: Handler, _: int) -> None:
    handler.start_stream()
    words(handler)
    handler.end(done=False)


def finish_without_done(handler: Handler, _: int) -> None:
    handler.start_stream()
    words(handler)
    handler.event(chunk(finish="stop"))
    handler.end(done=False)


def garbage(handler: Handler, _: int) -> None:
    handler.start_stream()
    handler.raw(": keep-alive\n\n")
    handler.raw("this is not a field\n\n")
    handler.event("{not json")
    handler.event("[1, 2]")
    handler.raw("event: ping\ndata: \n\n")
    handler.raw(": ping - 2026-12-01 12:00:00\n\n")
    words(handler)
    handler.raw(":\n\n")
    handler.event(chunk(finish="stop"))
    handler.end()


def error_mid_stream(handler: Handler, _: int) -> None:
    handler.start_stream()
    handler.event(chunk("Half an"))
    handler.event(chunk(" answer"))
    handler.event({"error": {"message": "CUDA out of memory on rank 3", "type": "server_error"}})
    handler.end(done=False)


def reasoning(handler: Handler, _: int) -> None:
    handler.start_stream()
    handler.event(chunk(reasoning_content="Two plus two: "))
    handler.event(chunk(reasoning="that makes four."))  # vLLM >= 0.11 and Ollama name it so
    handler.event(chunk("The answer is 4."))
    handler.event(chunk(finish="stop"))
    handler.end()


def slow_reasoning(handler: Handler, _: int) -> None:
    """A thought every 50 ms, 400 of them, then the answer: long enough to be killed mid-thinking."""
    handler.start_stream()
    try:
        for index in range(400):
            handler.event(chunk(reasoning_content=f" t{index}"))
            time.sleep(0.05)
        handler.event(chunk("Done thinking."))
        handler.event(chunk(finish="stop"))
        handler.end()
    except OSError:  # the client went away (killed)
        handler.server.record.closed_early += 1


def busy_then_ok(handler: Handler, count: int) -> None:
    if count == 1:
        handler.send_response(429)
        handler.send_header("Retry-After", "0")
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    elif count == 2:
        handler._json(503, {"error": {"message": "loading model"}})
    else:
        normal(handler, count)


def dropped(handler: Handler, _: int) -> None:
    handler.start_stream()
    words(handler)
    handler.drop()


def html_page(handler: Handler, _: int) -> None:
    handler._send(200, "text/html; charset=utf-8", b"<!DOCTYPE html><html><body>Welcome to nginx!</body></html>")


def never_answers(handler: Handler, _: int) -> None:
    handler.server.stopping.wait(30)


def silent_after_first(handler: Handler, _: int) -> None:
    handler.start_stream()
    handler.event(chunk("One"))
    handler.server.stopping.wait(30)


SCENARIOS: dict[str, Callable[[Handler, int], None]] = {
    "slow": slow, "missing-done": missing_done, "finish-without-done": finish_without_done, "garbage": garbage,
    "error": error_mid_stream, "reasoning": reasoning, "slow-reasoning": slow_reasoning, "busy-then-ok": busy_then_ok, "dropped": dropped,
    "html": html_page, "never-answers": never_answers, "silent-after-first": silent_after_first,
}


class FakeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, api_key: str = "") -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.api_key = api_key
        self.record = Record()
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": POLL_S},
                                        name="fake-sse-server", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):  # a client that closed its keep-alive connection
            return
        super().handle_error(request, client_address)

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stopping.set()
        self.shutdown()
        self.server_close()
        self._thread.join(5)

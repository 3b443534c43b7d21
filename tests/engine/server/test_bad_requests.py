"""Bad requests get their status and OpenAI's error body, and the server goes on; 200 connections at once never hang it.

Also the gate: API keys (Bearer and X-Api-Key), browser origins, the Host header,
and what the server refuses to start with.
"""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any, Iterator

import pytest

from engine.clients import EngineHost
from engine.server import ApiServer, ServerOptions, ServerOptionsError, ServerStartError

GOOD = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 3, "temperature": 0}
USER = [{"role": "user", "content": "Hi"}]


def call(port: int, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None,
         raw: bytes | None = None) -> tuple[int, dict[str, str], Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        connection.request(method, path, data, {"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        text, headers = response.read(), {k.lower(): v for k, v in response.getheaders()}
        is_json = headers.get("content-type", "").startswith("application/json")
        return response.status, headers, json.loads(text) if is_json else text
    finally:
        connection.close()


def assert_openai_error(body: Any, kind: str, param: str | None = None) -> str:
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
    assert body["error"]["type"] == kind and body["error"]["message"]
    if param is not None:
        assert body["error"]["param"] == param, body
    return str(body["error"]["message"])


BAD_CHATS = [
    ("malformed JSON", b'{"messages": [', None),
    ("not an object", b"[1, 2]", None),
    ("empty body", b"", None),
    ("wrong type", {"messages": USER, "temperature": "hot"}, "temperature"),
    ("a number as text", {"messages": USER, "max_tokens": "5"}, "max_tokens"),
    ("missing messages", {"model": "x"}, "messages"),
    ("no messages", {"messages": []}, "messages"),
    ("negative max_tokens", {"messages": USER, "max_tokens": -1}, "max_tokens"),
    ("unknown role", {"messages": [{"role": "wizard", "content": "hi"}]}, "messages[0].role"),
    ("a message that is not text", {"messages": [{"role": "user", "content": 5}]}, "messages[0].content"),
    ("an image", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     "messages[0].content[0].image_url"),  # not a data: URL
    ("n > 1", {"messages": USER, "n": 2}, "n"),
    ("a tool without a name", {"messages": USER, "tools": [{"type": "function", "function": {}}]},
     "tools[0].function.name"),
    ("too many top logprobs", {"messages": USER, "logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ("an unknown response format", {"messages": USER, "response_format": {"type": "yaml"}}, "response_format.type"),
    ("logit bias", {"messages": USER, "logit_bias": {"42": 5}}, "logit_bias"),
    ("temperature out of range", {"messages": USER, "temperature": 7}, "temperature"),
    ("stop of the wrong type", {"messages": USER, "stop": 5}, "stop"),
]


@pytest.mark.parametrize("case, body, param", BAD_CHATS, ids=[case for case, _, _ in BAD_CHATS])
def test_a_bad_chat_request_is_a_400_and_the_next_good_one_works(server: ApiServer, case: str, body: Any,
                                                                 param: str | None) -> None:
    kwargs = {"raw": body} if isinstance(body, bytes) else {"body": body}
    status, _, answer = call(server.port, "POST", "/v1/chat/completions", **kwargs)
    assert status == 400, (case, answer)
    assert_openai_error(answer, "invalid_request_error", param)
    status, _, good = call(server.port, "POST", "/v1/chat/completions", GOOD)
    assert status == 200 and good["choices"][0]["message"]["content"]


def test_bad_plain_completions(server: ApiServer) -> None:
    for body, param in (({"prompt": ["a", "b"]}, "prompt"), ({"prompt": "a", "echo": True}, "echo"),
                        ({"prompt": [1, 2, 3]}, None), ({"max_tokens": 3}, "prompt")):
        status, _, answer = call(server.port, "POST", "/v1/completions", body)
        assert status == 400, (body, answer)
        assert_openai_error(answer, "invalid_request_error", param)


@pytest.mark.parametrize("stream", [False, True])
def test_a_prompt_longer_than_the_context_is_a_400_streaming_or_not(server: ApiServer, stream: bool) -> None:
    body = {"prompt": "word " * 1500, "max_tokens": 4, "stream": stream}
    status, _, answer = call(server.port, "POST", "/v1/completions", body)
    assert status == 400 and answer["error"]["code"] == "context_length_exceeded"
    assert "1024 tokens" in assert_openai_error(answer, "invalid_request_error")


def test_unknown_model_path_method_and_a_body_too_large(server: ApiServer) -> None:
    status, _, answer = call(server.port, "POST", "/v1/chat/completions", {**GOOD, "model": "gpt-4o"})
    assert status == 404 and answer["error"]["code"] == "model_not_found"
    assert "'SmolLM2-135M-Instruct.Q4_1'" in assert_openai_error(answer, "not_found_error", "model")
    status, _, answer = call(server.port, "GET", "/v2/things")
    assert status == 404 and "POST /v1/chat/completions" in assert_openai_error(answer, "not_found_error")
    status, _, answer = call(server.port, "GET", "/v1/chat/completions")
    assert status == 405 and assert_openai_error(answer, "invalid_request_error")
    huge = json.dumps({"messages": [{"role": "user", "content": "x" * (5 * 2**20)}]}).encode()
    status, _, answer = call(server.port, "POST", "/v1/chat/completions", raw=huge)
    assert status == 413 and "4 MiB" in assert_openai_error(answer, "invalid_request_error")
    status, _, good = call(server.port, "POST", "/v1/chat/completions", GOOD)
    assert status == 200


def test_health_and_models(server: ApiServer) -> None:
    status, _, health = call(server.port, "GET", "/health")
    assert status == 200 and health["model"] == "SmolLM2-135M-Instruct.Q4_1"
    status, _, models = call(server.port, "GET", "/v1/models")
    # the loaded model first; then the library's others (the models folder, the Hub's cache), none loaded
    assert status == 200 and models["data"][0]["id"] == "SmolLM2-135M-Instruct.Q4_1"
    model = models["data"][0]
    assert [m["loaded"] for m in models["data"]] == [True] + [False] * (len(models["data"]) - 1)
    assert set(model) == {"id", "object", "created", "owned_by", "capabilities", "loaded"}  # not where the file lies
    info = server.desk.host.model_info
    assert info is not None and info.path not in json.dumps(models)
    assert model["capabilities"] == [{"tools": "tool_use"}.get(name, name) for name in info.capabilities]


def test_two_hundred_connections_at_once_are_answered_or_refused_and_nothing_hangs(server: ApiServer) -> None:
    results: list[tuple[int, dict[str, str], Any]] = []
    lock = threading.Lock()
    go = threading.Barrier(200)

    def one(index: int) -> None:
        go.wait()
        result = call(server.port, "POST", "/v1/chat/completions",
                      {"messages": [{"role": "user", "content": f"Number {index}."}], "max_tokens": 2})
        with lock:
            results.append(result)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(200)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads), "a request hung"
    statuses = sorted(status for status, _, _ in results)
    assert len(results) == 200 and set(statuses) <= {200, 503}, statuses
    answered = [body for status, _, body in results if status == 200]
    refused = [(headers, body) for status, headers, body in results if status == 503]
    assert len(answered) >= 4 and refused  # the slots and the queue took some; the rest were told to come back
    assert all(body["choices"][0]["message"]["content"] is not None for body in answered)
    for headers, body in refused:
        assert headers["retry-after"].isdigit() and body["error"]["code"] == "queue_full"
    assert server.in_flight == 0
    assert call(server.port, "POST", "/v1/chat/completions", GOOD)[0] == 200


@pytest.fixture(scope="module")
def keyed(engine: EngineHost) -> Iterator[ApiServer]:
    """A second server on the same engine, with a key and one allowed web origin."""
    api = ApiServer(engine, ServerOptions(port=0, api_key="sekrit", cors_origins=("http://app.example",)))
    api.start()
    yield api
    api.stop()


def test_the_api_key_as_bearer_or_x_api_key(keyed: ApiServer) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"X-Api-Key": "sekri"}):
        status, response_headers, answer = call(keyed.port, "POST", "/v1/chat/completions", GOOD, headers)
        assert status == 401 and response_headers["www-authenticate"] == "Bearer"
        assert "X-Api-Key" in assert_openai_error(answer, "authentication_error")
    assert call(keyed.port, "GET", "/v1/models")[0] == 401
    assert call(keyed.port, "POST", "/v1/chat/completions", GOOD, {"Authorization": "Bearer sekrit"})[0] == 200
    assert call(keyed.port, "POST", "/v1/chat/completions", GOOD, {"X-Api-Key": "sekrit"})[0] == 200
    assert call(keyed.port, "GET", "/health")[0] == 200  # for monitors: says only whether a model answers


def test_web_pages_are_refused_unless_their_origin_is_allowed(server: ApiServer, keyed: ApiServer) -> None:
    status, _, answer = call(server.port, "POST", "/v1/chat/completions", GOOD, {"Origin": "http://evil.example"})
    assert status == 403 and answer["error"]["code"] == "origin_not_allowed"
    preflight = {"Origin": "http://app.example", "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization,content-type"}
    status, headers, _ = call(keyed.port, "OPTIONS", "/v1/chat/completions", headers=preflight)
    assert status == 200 and headers["access-control-allow-origin"] == "http://app.example"
    allowed = {"Origin": "http://app.example", "Authorization": "Bearer sekrit"}
    assert call(keyed.port, "POST", "/v1/chat/completions", GOOD, allowed)[0] == 200
    status, _, _ = call(keyed.port, "POST", "/v1/chat/completions", GOOD,
                        {"Origin": "http://evil.example", "Authorization": "Bearer sekrit"})
    assert status == 403


def test_a_page_that_rebinds_its_name_to_this_computer_is_refused(server: ApiServer) -> None:
    status, _, answer = call(server.port, "GET", "/v1/models", headers={"Host": f"evil.example:{server.port}"})
    assert status == 403 and "evil.example" in assert_openai_error(answer, "permission_error")
    assert call(server.port, "GET", "/v1/models", headers={"Host": f"localhost:{server.port}"})[0] == 200


def test_what_the_server_refuses_to_start_with(engine: EngineHost, server: ApiServer) -> None:
    with pytest.raises(ServerOptionsError, match="API key"):
        ApiServer(engine, ServerOptions(host="0.0.0.0", port=0))
    taken = ApiServer(engine, ServerOptions(port=server.port))
    with pytest.raises(ServerStartError, match=f"Port {server.port} on 127.0.0.1 is already in use") as error:
        taken.start()
    assert error.value.port_in_use and not taken.running


def test_without_a_model_health_and_requests_say_503() -> None:
    empty = EngineHost()
    empty.start()
    api = ApiServer(empty, ServerOptions(port=0))
    api.start()
    try:
        status, headers, answer = call(api.port, "GET", "/health")
        assert status == 503 and answer["error"]["code"] == "model_not_loaded" and headers["retry-after"].isdigit()
        listed = call(api.port, "GET", "/v1/models")[2]["data"]
        assert "SmolLM2-135M-Instruct.Q4_1" in [m["id"] for m in listed] and not any(m["loaded"] for m in listed)
        status, _, answer = call(api.port, "GET", "/v1/embedding")
        message = assert_openai_error(answer, "not_found_error")
        assert status == 404 and message.startswith("There is no /v1/embedding here. This server has: ")
        for endpoint in ("GET /health", "GET /v1/models", "POST /v1/chat/completions", "POST /v1/completions"):
            assert endpoint in message
        status, _, answer = call(api.port, "POST", "/v1/chat/completions", GOOD)
        assert status == 503 and "No model is loaded" in assert_openai_error(answer, "server_error")
    finally:
        api.stop()
        empty.shutdown()


def test_the_404_lists_the_routes_the_app_has_whoever_added_them() -> None:
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route

    from engine.server.app import endpoints

    async def answer(request: Any) -> PlainTextResponse:
        return PlainTextResponse("")

    app = Starlette(routes=[Route("/v1/models", answer, methods=["GET"]), Route("/v1/new", answer, methods=["POST"])])
    assert endpoints(app) == "GET /v1/models, POST /v1/new"


def test_the_model_list_names_the_model_and_what_it_can_do_only() -> None:
    from engine.server.responses import model_list

    assert model_list([("SmolLM2", ("tools",), True)], 7) == {"object": "list", "data": [
        {"id": "SmolLM2", "object": "model", "created": 7, "owned_by": "hearth", "capabilities": ["tool_use"],
         "loaded": True}]}

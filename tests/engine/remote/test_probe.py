"""check_server, the Test connection button's engine: a plain message for each way a server can be wrong."""

from __future__ import annotations

import socket
import time
from typing import Iterator

import pytest

from engine.remote.errors import base_url
from engine.remote.probe import check_server
from tests.engine.remote.sse_server import MODELS, FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(api_key="secret") as fake:
        yield fake


@pytest.mark.parametrize("typed", ["http://h:8000", "http://h:8000/", "http://h:8000/v1",
                                   "http://h:8000/v1/", "http://h:8000/v1/chat/completions"])
def test_the_base_url_is_one_form_whatever_is_pasted(typed: str) -> None:
    assert base_url(typed) == "http://h:8000"


@pytest.mark.parametrize(("typed", "expected"), [
    ("gpu-box:8000/v1", "https://gpu-box:8000"), ("api.example.com/v1/", "https://api.example.com"),
    ("10.0.0.5:8000", "https://10.0.0.5:8000"), ("localhost:8000/v1", "http://localhost:8000"),
    ("127.0.0.1:8000", "http://127.0.0.1:8000"), ("[::1]:8000/v1", "http://[::1]:8000"),
    ("http://gpu-box:8000", "http://gpu-box:8000")])  # a scheme typed is kept
def test_a_url_without_a_scheme_gets_https_unless_it_is_this_computer(typed: str, expected: str) -> None:
    """The key goes with every request: it travels in clear text only where the user typed http:// or to here."""
    assert base_url(typed) == expected


def test_reachable_lists_the_models_and_the_latency(server: FakeServer) -> None:
    check = check_server(server.url, "secret")
    assert check.ok and check.model_ids == MODELS and check.models[0].context_length == 2048
    assert check.message.startswith(f"Connected to {server.url[:-3]} in ")
    assert check.message.endswith(": 2 models (fake-small, fake-large).") and check.latency_ms > 0


def test_a_wrong_key_says_so(server: FakeServer) -> None:
    check = check_server(server.url, "wrong")
    assert not check.ok and check.status == 401
    assert "refused the API key (401: Invalid API key)" in check.message


def test_an_html_page_is_not_an_openai_server(server: FakeServer) -> None:
    check = check_server(server.url.replace("/v1", "/html"), "secret")
    assert not check.ok and "answered with a web page (HTTP 200), not an OpenAI-compatible API" in check.message


def test_a_404_says_there_is_no_api_there(server: FakeServer) -> None:
    check = check_server(server.url.replace("/v1", "/elsewhere"), "secret")
    assert not check.ok and check.status == 404 and "has no OpenAI-compatible API at /v1 (404: Not Found)" in check.message


def test_https_to_a_plain_http_server_is_a_tls_error(server: FakeServer) -> None:
    check = check_server(server.url.replace("http://", "https://"), "secret")
    assert not check.ok and check.message.startswith("The TLS (https) connection to https://127.0.0.1:")


def test_a_name_that_does_not_resolve() -> None:
    check = check_server("http://hearth-test.invalid:8000/v1")
    assert not check.ok and check.message == ("The server's name in http://hearth-test.invalid:8000 could not be "
                                              "found. Check the spelling of the host name.")


def test_nothing_listening_is_connection_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    check = check_server(f"http://127.0.0.1:{port}")
    assert not check.ok and "(connection refused)" in check.message


def test_a_server_that_accepts_and_never_answers_times_out() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)  # the kernel accepts; nobody ever reads or answers
    try:
        started = time.monotonic()
        check = check_server(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=0.5)
        assert time.monotonic() - started < 5
        assert not check.ok and check.message.endswith("accepted the connection but did not answer in time.")
    finally:
        listener.close()


def test_an_empty_url_asks_for_one() -> None:
    assert check_server("  ").message.startswith("Enter the server's URL")


@pytest.mark.parametrize(("item", "sees"), [
    ({"id": "m", "capabilities": ["vision", "tools"]}, True), ({"id": "m", "capabilities": ["tools"]}, False),
    ({"id": "m", "type": "vlm"}, True), ({"id": "m", "type": "llm"}, False), ({"id": "m", "object": "model"}, None)])
def test_which_listed_models_take_pictures(item: dict[str, object], sees: bool | None) -> None:
    from engine.protocol import ModelConfig
    from engine.remote.engine import model_info
    from engine.remote.probe import RemoteModel, ServerCheck, _sees

    assert _sees(item) is sees
    check = ServerCheck(True, "", (RemoteModel("m", 0, sees),))
    info = model_info(ModelConfig(path="http://127.0.0.1:8000/v1", backend="remote"), check, "m")
    assert ("vision" in info.capabilities) is (sees is not False)  # unsaid: the server decides

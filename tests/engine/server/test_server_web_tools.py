"""`hearth-serve --tools web`: the server runs web_search and fetch_page itself, through the real openai client,
the real server on 127.0.0.1, the default model and the stand-in web (pages and a SearXNG-shaped search).

The model is made to call the tool (a named tool_choice); its arguments are its own, so what is checked is
that the server ran exactly that call (the stand-in web saw it, the result is the tool's own for those
arguments), that the result went back to the model as an untrusted tool message in the next round's prompt,
and that the client got the steps and the answer after them, not a call it would have to run.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2
import openai
import pytest

from engine.clients import EngineHost
from engine.protocol import Submit
from engine.server import ApiServer, ServerOptions
from engine.server.chat_mapping import chat_submit, server_tool_names
from engine.server.errors import ApiError
from engine.server.schema import ChatRequest, parse
from engine.server.web_tools import ServerTools, WebToolSettings, web_tools
from engine.tools.builtin.base import UNTRUSTED_HEAD, run_safely
from engine.tools.builtin.web_search import SearchResult, SearxngBackend
from tests.engine.server.conftest import Tap
from tests.engine.tools.standin_web import StandinWeb, standin_web

MODEL = "SmolLM2-135M-Instruct.Q4_1"
ASK = [{"role": "user", "content": "Search the web for kettles."}]
SEARCH_CHOICE = {"type": "function", "function": {"name": "web_search"}}
MAX_TOKENS = 100  # a call with a short query fits well inside; the answer after it is cut here if it is long


@pytest.fixture(scope="module")
def web() -> Iterator[StandinWeb]:
    with standin_web() as served:
        yield served


def tools_of(web: StandinWeb, **limits: Any) -> ServerTools:
    settings = WebToolSettings(backend=SearxngBackend(f"http://127.0.0.1:{web.port}/"), guard=web.guard(),
                               limits=ServerTools(**limits))
    return web_tools(settings)


@contextmanager
def serving(engine: EngineHost, tools: ServerTools) -> Iterator[openai.OpenAI]:
    api = ApiServer(engine, ServerOptions(port=0, max_waiting=8, server_tools=tools))
    api.start()
    try:
        with openai.OpenAI(base_url=api.url, api_key="unused", max_retries=0, timeout=120) as client:
            yield client
    finally:
        api.stop()


def submits_after(tap: Tap, start: int) -> list[Submit]:
    with tap.condition:
        return [m for kind, m, _, _ in tap.records[start:] if kind == "command" and isinstance(m, Submit)]


# ---------------------------------------------------------------- no model: how a request asks


def request(**fields: Any) -> ChatRequest:
    return parse(ChatRequest, {"messages": ASK, **fields})


def test_a_tool_entry_of_the_built_in_s_type_asks_the_server_to_run_it(web: StandinWeb) -> None:
    tools = tools_of(web)
    asked = request(tools=[{"type": "web_search"}, {"type": "fetch_page"}], tool_choice={"type": "web_search"})
    submit = chat_submit("api-1", asked, 1024, tools)
    assert [tool.name for tool in submit.tools] == ["web_search", "fetch_page"]
    assert submit.tool_choice == "web_search"
    assert server_tool_names(asked, tools) == ("web_search", "fetch_page")
    own = request(tools=[{"type": "function", "function": {"name": "lookup"}}, {"type": "web_search_preview"}])
    assert server_tool_names(own, tools) == ("web_search",)  # the client's function stays the client's


@pytest.mark.parametrize("tools, fields, param, words", [
    (ServerTools(), {"tools": [{"type": "web_search"}]}, "tools[0].type", "--tools web"),
    (None, {"tools": [{"type": "code_interpreter"}]}, "tools[0].type", "'web_search'"),
    (None, {"tools": [{"type": "function"}]}, "tools[0].function", "function"),
    (None, {"tools": [{"type": "web_search"}, {"type": "function", "function": {"name": "web_search"}}]},
     "tools[1].name", "two tools"),
])
def test_a_tool_the_server_does_not_run_is_a_400_naming_the_field(
        web: StandinWeb, tools: ServerTools | None, fields: dict[str, Any], param: str, words: str) -> None:
    with pytest.raises(ApiError) as refused:
        chat_submit("api-1", request(**fields), 1024, tools if tools is not None else tools_of(web))
    assert refused.value.param == param and words in refused.value.message


# ---------------------------------------------------------------- the model, the server, the stand-in web


@pytest.mark.parametrize("stream", [False, True])
def test_the_server_runs_the_forced_search_and_the_model_answers_after_it(  # type: ignore[no-untyped-def]
        engine: EngineHost, tap: Tap, web: StandinWeb, stream: bool) -> None:
    tools = tools_of(web, rounds=1)  # one round of calls, then the answer with no tools offered
    start, searched = len(tap.records), web.paths().count("/search")
    with serving(engine, tools) as client:
        answer = client.chat.completions.create(model=MODEL, messages=ASK, tools=[{"type": "web_search"}],
                                                tool_choice=SEARCH_CHOICE, max_tokens=MAX_TOKENS, temperature=0,
                                                stream=stream)
        steps, finish_reason, content = _steps_of(answer, stream)
    assert len(steps) == 1 and steps[0]["function"]["name"] == "web_search"
    assert finish_reason in ("stop", "length")  # never "tool_calls": the call was the server's to run
    arguments = steps[0]["function"]["arguments"]
    expected = run_safely(tools.tools[0], arguments)  # the search as the server ran it, asked the same
    assert steps[0]["output"] == expected.text and steps[0]["is_error"] is False
    assert steps[0]["output"].startswith(UNTRUSTED_HEAD + "a web search (SearXNG) for ")
    assert web.paths().count("/search") == searched + 2  # the server's call, and ours just now
    first, second = submits_after(tap, start)[:2]
    assert first.tool_choice == "web_search" and second.tool_choice == "none"
    said, result = second.messages[-2:]
    assert said.role == "assistant" and [(c.name, c.arguments) for c in said.tool_calls] == [("web_search", arguments)]
    assert (result.role, result.content, result.tool_call_id) == ("tool", expected.text, steps[0]["id"])
    assert second.messages[:-2] == first.messages
    assert isinstance(content, str)


def _steps_of(answer: Any, stream: bool) -> tuple[list[dict[str, Any]], str, str]:
    if not stream:
        choice = answer.choices[0]
        assert not choice.message.tool_calls
        return choice.message.model_extra["server_tool_calls"], choice.finish_reason, choice.message.content
    steps: list[dict[str, Any]] = []
    reason, text = "", ""
    for chunk in answer:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        assert not delta.tool_calls  # the server's own calls never stream as calls for the client to run
        steps.extend((delta.model_extra or {}).get("server_tool_calls", []))
        text += delta.content or ""
        reason = chunk.choices[0].finish_reason or reason
    return steps, reason, text


def test_past_the_page_limit_fetch_page_is_not_run(engine: EngineHost, web: StandinWeb) -> None:
    tools = tools_of(web, rounds=1, pages=0)
    before = len(web.requests)
    with serving(engine, tools) as client:
        answer = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Read the page about kettles."}],
            tools=[{"type": "fetch_page"}], tool_choice={"type": "fetch_page"}, max_tokens=MAX_TOKENS, temperature=0)
    steps = answer.choices[0].message.model_extra["server_tool_calls"]
    assert [step["function"]["name"] for step in steps] == ["fetch_page"]
    assert steps[0]["is_error"] and "may fetch 0 pages" in steps[0]["output"]
    assert len(web.requests) == before  # nothing was fetched
    assert json.loads(steps[0]["function"]["arguments"]).keys() == {"url"}


def test_hearth_serve_offers_the_web_tools_only_when_told() -> None:
    from engine.server.cli import _server_tools
    from engine.server.cli import parse as parse_cli

    assert _server_tools(parse_cli([])).tools == ()
    told = _server_tools(parse_cli(["--tools", "web", "--searxng", "http://127.0.0.1:8888/", "--allow-host", "wiki",
                                    "--tool-rounds", "2"]))
    assert told.names() == ("web_search", "fetch_page") and told.rounds == 2
    search, fetch = (tool.run.__self__ for tool in told.tools)  # type: ignore[attr-defined]
    assert search.backend == SearxngBackend("http://127.0.0.1:8888/") and fetch.guard.allowed_hosts == ("wiki",)
    for wrong in (["--searxng", "http://127.0.0.1:8888/"], ["--tools", "web", "--tool-rounds", "0"]):
        with pytest.raises(SystemExit):
            parse_cli(wrong)


@pytest.mark.parametrize("stream", [False, True])
def test_responses_api_gets_the_search_as_a_web_search_call_item(  # type: ignore[no-untyped-def]
        engine: EngineHost, web: StandinWeb, stream: bool) -> None:
    tools = tools_of(web, rounds=1)
    with serving(engine, tools) as client:
        asked = {"model": MODEL, "input": "Search the web for kettles.", "tools": [{"type": "web_search"}],
                 "tool_choice": {"type": "web_search"}, "max_output_tokens": MAX_TOKENS, "temperature": 0}
        if stream:
            events = list(client.responses.create(**asked, stream=True))
            added = [e.item for e in events if e.type == "response.output_item.added"]
            assert added[0].type == "web_search_call"
            assert [e.type for e in events if e.type.startswith("response.web_search_call")] == [
                "response.web_search_call.completed"]
            response = events[-1].response
        else:
            response = client.responses.create(**asked)
    kinds = [item.type for item in response.output]
    assert kinds[0] == "web_search_call" and "function_call" not in kinds and kinds[-1] == "message"
    step = response.output[0]
    query = step.action.query.strip()  # the model's; max_results, if it gave one, is not in the item
    assert step.action.type == "search" and not step.model_extra["is_error"]
    assert step.model_extra["output"].startswith(f"{UNTRUSTED_HEAD}a web search (SearXNG) for {query!r}")
    assert f"1. Result 1 about {query}\n" in step.model_extra["output"]
    assert response.status in ("completed", "incomplete")


class HeldSearch:
    """A search backend that waits until the test lets it answer, so a client can leave while the server runs it."""

    name = "held"

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()

    def search(self, query: str, max_results: int) -> list[SearchResult]:
        self.entered.set()
        self.release.wait(60)
        return [SearchResult("Late", "http://site.test/late", "too late")]


def test_a_client_that_leaves_while_the_server_runs_a_call_ends_the_request(
        engine: EngineHost, tap: Tap, web: StandinWeb) -> None:
    backend = HeldSearch()
    tools = web_tools(WebToolSettings(backend=backend, guard=web.guard(), limits=ServerTools(rounds=2)))
    api = ApiServer(engine, ServerOptions(port=0, max_waiting=8, server_tools=tools))
    api.start()
    start = len(tap.records)
    try:
        body = {"model": MODEL, "messages": ASK, "tools": [{"type": "web_search"}], "tool_choice": SEARCH_CHOICE,
                "max_tokens": MAX_TOKENS, "temperature": 0, "stream": True}
        with httpx2.stream("POST", f"{api.url}/chat/completions", json=body, timeout=120) as response:
            assert response.status_code == 200
            lines = response.iter_lines()  # kept: dropping it would close the response here
            assert next(lines).startswith("data: ")  # the opening chunk: the turn has its slot
            assert backend.entered.wait(30), "the server never ran the call"
        deadline = time.monotonic() + 60  # a readiness poll, not a timing assertion
        while api.in_flight and time.monotonic() < deadline:
            time.sleep(0.05)
        assert api.in_flight == 0
    finally:
        backend.release.set()
        api.stop()
    assert len(submits_after(tap, start)) == 1  # no round after the call: the request ended with its client

"""`python -m engine.bench --research`: what a research turn costs, on the stand-in web (never the internet).

One run is the research plan of engine/tools/research.py through the real engine on the chosen model:
the model is made to search (web_search under a named tool choice, its own query, answered by the
stand-in's SearXNG-shaped API), then to read pages one round each (fetch_page whose address can only
be one of the results), each fetched through the real address guard, robots.txt and size limits and
extracted by the real extractor, then to answer under the citation pattern. Measured: pages fetched,
the fetch (connection, robots.txt, body) and the extraction per page, the answer turn, and the share of
the answer's citations that point at a page that was fetched.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from engine.bench.harness import Bench, BenchError
from engine.bench.report import percentile
from engine.bench.standin_web import BenchWeb, bench_web
from engine.protocol import (
    ChatMessage,
    ModelConfig,
    SamplingParams,
    Submit,
    ToolCall,
    TurnFinished,
)
from engine.tools.builtin.fetch_page import ACCEPT, page_result
from engine.tools.builtin.robots import RobotsRules
from engine.tools.builtin.web_client import FetchError, WebLimits, get, guarded_client
from engine.tools.builtin.web_search import NAME as WEB_SEARCH
from engine.tools.builtin.web_search import SearxngBackend, WebSearch
from engine.tools.research import (
    INSTRUCTIONS,
    ReadPage,
    ResearchLimits,
    answer_constraint,
    citations_valid_fraction,
    fetch_spec,
)
from engine.tools.results import ToolResult, error_result

QUESTION = "When did kettles start to whistle, and who made the first ones?"
PAGE_TEXT_LIMIT = 800  # characters of each page the model reads: a small model's prompt stays short
CALL_TOKENS = 96  # a call's tokens at most (a query, or one of the results' addresses)
ANSWER_TOKENS = 320  # every token adds a character: the pattern (313 characters at most) always ends inside


@dataclass
class Run:
    read: list[ReadPage] = field(default_factory=list)
    fetch_ms: list[float] = field(default_factory=list)
    extract_ms: list[float] = field(default_factory=list)
    answer_ms: float = 0.0
    answer: str = ""
    valid_fraction: float | None = None


def measure_research(args: argparse.Namespace) -> dict[str, Any]:
    limits = ResearchLimits(pages=args.research_pages)
    bench = Bench()
    bench.loop.start()
    try:
        bench.load(ModelConfig(path=args.model, threads=args.threads, slots=1, context_length=4096))
        with bench_web() as web:
            runs = [research_run(bench, web, f"research-{number}", limits) for number in range(args.repeat)]
    finally:
        bench.loop.shutdown()
    fractions = [run.valid_fraction for run in runs if run.valid_fraction is not None]
    return {"model": args.model, "research": {
        "question": QUESTION, "runs": len(runs), "pages_fetched": min(len(run.read) for run in runs),
        "fetch_ms_p50": round(percentile([ms for run in runs for ms in run.fetch_ms], 0.5), 2),
        "extract_ms_p50": round(percentile([ms for run in runs for ms in run.extract_ms], 0.5), 2),
        "answer_ms": round(statistics.median(run.answer_ms for run in runs), 1),
        "citations_valid_fraction": round(min(fractions), 3) if fractions else None,
        "answer": runs[-1].answer,
    }}


def research_run(bench: Bench, web: BenchWeb, chat_id: str, limits: ResearchLimits) -> Run:
    """Search, read limits.pages pages, answer: one run on one chat (its cache serves every round)."""
    run = Run()
    search = WebSearch(SearxngBackend(web.search_url()))
    messages = [ChatMessage("system", INSTRUCTIONS), ChatMessage("user", QUESTION)]
    call = _call(bench, Submit(chat_id, tuple(messages), _sampling(), tools=(search.tool().spec,),
                               tool_choice=WEB_SEARCH, parallel_tool_calls=False))
    result = _searched(search, call)
    messages += _round(call, result)
    unread = list(result.sources)
    rules, guard = RobotsRules(), web.guard()
    for _ in range(min(limits.pages, len(unread))):
        call = _call(bench, Submit(chat_id, tuple(messages), _sampling(), tools=(fetch_spec(unread),),
                                   tool_choice="fetch_page", parallel_tool_calls=False))
        url = json.loads(call.arguments)["url"]
        unread.remove(url)
        page = _fetched(run, rules, guard, url)
        if not page.is_error:
            run.read.append(ReadPage(len(run.read) + 1, url, _title(page.text)))
        messages += _round(call, page)
    started = time.perf_counter()
    answer = _turn(bench, Submit(chat_id, tuple(messages), _sampling(ANSWER_TOKENS, len(run.read)), tool_choice="none"))
    run.answer_ms = (time.perf_counter() - started) * 1000
    run.answer = answer.text
    run.valid_fraction = citations_valid_fraction(answer.text, run.read)
    return run


def _sampling(max_new_tokens: int = CALL_TOKENS, cite: int = 0) -> SamplingParams:
    constraint = answer_constraint(cite) if cite else None
    return SamplingParams(temperature=0.0, seed=1, max_new_tokens=max_new_tokens, constraint=constraint)


def _searched(search: WebSearch, call: ToolCall) -> ToolResult:
    try:
        return search.run(json.loads(call.arguments))
    except ValueError as error:  # a query the tool refuses (too long): the run cannot go on
        raise BenchError(f"The model's search could not run: {error}") from None


def _fetched(run: Run, rules: RobotsRules, guard: Any, url: str) -> ToolResult:
    """fetch_page's work in its two parts, each timed: the fetch (guard, robots.txt, body), the extraction."""
    limits = WebLimits()
    started = time.perf_counter()
    try:
        with guarded_client(guard, limits.timeout_s) as client:
            if not rules.allows(client, url):
                return error_result(f"{url} asks robots not to fetch it.")
            body = get(client, url, limits, accept=ACCEPT)
    except FetchError as error:
        return error_result(str(error))
    extracting = time.perf_counter()
    result = page_result(body, limits, PAGE_TEXT_LIMIT)
    run.fetch_ms.append((extracting - started) * 1000)
    run.extract_ms.append((time.perf_counter() - extracting) * 1000)
    return result


def _title(text: str) -> str:
    found = re.search(r"^Title: (.*)$", text, re.MULTILINE)
    return found.group(1) if found else ""


def _round(call: ToolCall, result: ToolResult) -> list[ChatMessage]:
    return [ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", result.text, tool_call_id=call.id, name=call.name)]


def _call(bench: Bench, submit: Submit) -> ToolCall:
    finished = _turn(bench, submit)
    if not finished.tool_calls:
        raise BenchError(f"The model made no {submit.tool_choice} call (it ended with {finished.reason}).")
    return finished.tool_calls[0]


def _turn(bench: Bench, submit: Submit) -> TurnFinished:
    """One turn of the chat, to its end (a call is an end here, not a failure)."""
    bench.loop.send(submit)
    while True:
        _, event = bench.next_event()
        if isinstance(event, TurnFinished) and event.chat_id == submit.chat_id:
            if event.reason not in ("stop", "length", "tool_calls"):
                raise BenchError(f"The research turn ended with {event.reason}: {event.message}")
            return event


def research_table(result: dict[str, Any]) -> str:
    figures = result["research"]
    fraction = figures["citations_valid_fraction"]
    return "\n".join([
        f"research ({figures['runs']} runs, stand-in web): {figures['pages_fetched']} pages read per run",
        f"per page: fetch p50 {figures['fetch_ms_p50']:.1f} ms, extraction p50 {figures['extract_ms_p50']:.1f} ms",
        f"answer: {figures['answer_ms']:.0f} ms; citations pointing at fetched pages: "
        + ("none cited" if fraction is None else f"{fraction:.0%}"),
    ])

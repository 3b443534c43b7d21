"""The research turn's next step, read from its messages: search, read pages the search found, answer citing them.

The messages are built as the window stores them: calls, and results framed as the real tools frame them
(web_search's numbered results, fetch_page's title and URL inside the untrusted frame).
"""

from __future__ import annotations

import json
import re

from engine.protocol import ChatMessage, ToolCall
from engine.tools.builtin.base import untrusted
from engine.tools.builtin.web_search import SearchResult, results_text
from engine.tools.research import ResearchLimits
from engine.tools.research_plan import (
    NO_PAGE_NOTE,
    is_research_answer,
    next_step,
    page_texts,
    pages_read,
    progress,
    since_question,
    status_line,
    with_sources,
)

URLS = [f"http://site.test/page?n={n}" for n in range(1, 5)]
LIMITS = ResearchLimits(rounds=6, pages=2, time_s=60.0, answer_chars=300)
QUESTION = ChatMessage("user", "When did kettles start to whistle?")


def search_round(call_id: str = "s1") -> list[ChatMessage]:
    results = [SearchResult(f"Result {n}", url, f"Snippet {n}") for n, url in enumerate(URLS, 1)]
    return [ChatMessage("assistant", "", tool_calls=(ToolCall(call_id, "web_search", '{"query": "kettles"}'),)),
            ChatMessage("tool", untrusted("a web search (SearXNG) for 'kettles'", results_text(results)),
                        tool_call_id=call_id, name="web_search")]


def read_round(url: str, call_id: str, title: str = "Kettles", error: bool = False) -> list[ChatMessage]:
    page = f"{url} answered HTTP 404; nothing was read." if error else untrusted(url, f"Title: {title}\nURL: {url}\n\nText of {url}.")
    return [ChatMessage("assistant", "", tool_calls=(ToolCall(call_id, "fetch_page", json.dumps({"url": url})),)),
            ChatMessage("tool", page, tool_call_id=call_id, name="fetch_page")]


def test_it_searches_first_then_reads_only_unread_results_then_answers_citing_the_pages_read() -> None:
    step = next_step([QUESTION], LIMITS, 0.0)
    assert (step.kind, [spec.name for spec in step.tools], step.tool_choice, step.constraint) == (
        "search", ["web_search"], "web_search", None)

    turn = [QUESTION, *search_round()]
    step = next_step(turn, LIMITS, 1.0)
    assert (step.kind, step.tool_choice) == ("read", "fetch_page")
    assert json.loads(step.tools[0].parameters)["properties"]["url"]["enum"] == URLS

    turn += read_round(URLS[1], "r1", "Whistling kettles")
    step = next_step(turn, LIMITS, 2.0)
    assert json.loads(step.tools[0].parameters)["properties"]["url"]["enum"] == [URLS[0], URLS[2], URLS[3]]

    turn += read_round(URLS[0], "r2", "Electric kettles")
    step = next_step(turn, LIMITS, 3.0)  # two pages: the limit
    assert (step.kind, step.tools, step.tool_choice) == ("answer", (), "none")
    assert step.constraint is not None and step.note.endswith("citing them as [1] to [2].")
    assert step.max_new_tokens == LIMITS.answer_chars + 16
    pattern = re.compile(step.constraint.source)
    assert pattern.fullmatch("Kettles whistled from 1921 [1] and went electric later [2].")
    assert not pattern.fullmatch("Kettles whistled from 1921 [3].")  # no third page was read
    assert [(page.number, page.url, page.title) for page in pages_read(since_question(turn))] == [
        (1, URLS[1], "Whistling kettles"), (2, URLS[0], "Electric kettles")]
    assert page_texts(since_question(turn))[2].endswith(f"Text of {URLS[0]}.")


def test_a_failed_page_is_not_numbered_and_the_next_result_is_offered() -> None:
    turn = [QUESTION, *search_round(), *read_round(URLS[0], "r1", error=True)]
    done = progress(since_question(turn))
    assert (done.rounds, done.searched, done.pages, done.unread) == (2, True, (), tuple(URLS[1:]))
    turn += read_round(URLS[1], "r2")
    assert [page.number for page in pages_read(since_question(turn))] == [1]
    assert next_step(turn, LIMITS, 0.0).kind == "read"  # one page of two read, rounds left


def test_the_rounds_and_time_limits_answer_at_once() -> None:
    turn = [QUESTION, *search_round(), *read_round(URLS[0], "r1")]
    assert next_step(turn, LIMITS, LIMITS.time_s).kind == "answer"
    assert next_step(turn, ResearchLimits(rounds=2, pages=3), 0.0).kind == "answer"
    step = next_step(turn, ResearchLimits(rounds=3, pages=3), 0.0)
    assert step.kind == "read"


def test_a_declined_search_answers_without_a_pattern_and_says_no_page_was_read() -> None:
    call = ToolCall("s1", "web_search", '{"query": "kettles"}')
    turn = [QUESTION, ChatMessage("assistant", "", tool_calls=(call,)),
            ChatMessage("tool", "The user declined this call; it did not run.", tool_call_id="s1", name="web_search")]
    step = next_step(turn, LIMITS, 0.0)
    assert (step.kind, step.constraint, step.note) == ("answer", None, NO_PAGE_NOTE)


def test_only_the_last_questions_turn_counts() -> None:
    earlier = [QUESTION, *search_round(), *read_round(URLS[0], "r1"), ChatMessage("assistant", "Old answer [1].")]
    step = next_step([*earlier, ChatMessage("user", "And electric ones?")], LIMITS, 0.0)
    assert step.kind == "search"


def test_the_sources_under_the_answer_mark_it_as_a_research_answer() -> None:
    turn = [*search_round(), *read_round(URLS[2], "r1", "Whistles")]
    answer = with_sources("They whistled from 1921 [1].", pages_read(turn))
    assert answer == f"They whistled from 1921 [1].\n\nSources:\n\n- [1] Whistles <{URLS[2]}>"
    assert is_research_answer(ChatMessage("assistant", answer), turn)
    assert not is_research_answer(ChatMessage("assistant", answer), [QUESTION])  # no research before it
    assert not is_research_answer(ChatMessage("assistant", "They whistled [1]."), turn)


def test_the_status_line_shows_round_pages_and_time_against_their_limits() -> None:
    assert status_line(LIMITS, None, 0.0, "idle") == (
        "Research: up to 6 rounds · 2 pages · 1:00 — each call still asks you first")
    turn = [*search_round(), *read_round(URLS[0], "r1")]
    assert status_line(LIMITS, turn, 41.4, "running") == "Research: round 3 of 6 · 1 of 2 pages · 0:41 of 1:00"
    assert status_line(LIMITS, turn, 52.0, "answering") == "Research: writing the answer · 1 of 2 pages · 0:52 of 1:00"
    assert status_line(LIMITS, turn, 75.0, "stopped") == "Research stopped: 2 rounds · 1 page read · 1:15"

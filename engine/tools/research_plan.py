"""A research turn's next step, read from the conversation itself (Qt-free): the window's research mode.

After the question the model searches once (web_search, named), then reads pages one round each
(fetch_page whose address can only be one of the results not read yet: engine/tools/research.py),
then answers under the citation pattern, citing the pages by the order they were read. Everything is
read back from the messages since the question (calls, results, which pages were framed as read), so
a chat reopened from the history numbers its pages as it did, and the step never depends on state that
a restart loses. The limits (rounds, pages, time) end the reading early; the answer always comes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.protocol import ChatMessage, Constraint, ToolSpec
from engine.tools.builtin.base import framed_text, untrusted_source
from engine.tools.builtin.fetch_page import NAME as FETCH_PAGE
from engine.tools.builtin.web_search import NAME as WEB_SEARCH
from engine.tools.builtin.web_search import SPEC as SEARCH_SPEC
from engine.tools.research import ReadPage, ResearchLimits, answer_constraint, fetch_spec

_RESULT_URL = re.compile(r"^\d+\. .*\n {3}(\S+)$", re.MULTILINE)  # web_search's "1. Title\n   URL\n   snippet"
_TITLE = re.compile(r"^Title: (.*)$", re.MULTILINE)
SOURCES_HEAD = "Sources:"  # the list of pages read, under a research answer (stored and exported with it)
ANSWER_NOTE = "Now answer the question from the pages you read, citing them as [1] to [{pages}]."
NO_PAGE_NOTE = ("No page could be read. Answer briefly from what you know and say plainly that no web page "
                "was read, so the answer cites nothing.")


@dataclass(frozen=True)
class ResearchStep:
    """What the next round offers the model: its tools, the named choice, the answer's pattern, a note."""

    kind: str  # "search", "read" or "answer"
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: str = "none"
    constraint: Constraint | None = None
    note: str = ""  # for the system message of this round
    max_new_tokens: int = 0  # the least the round may write: room for the whole pattern (every token adds a character)


@dataclass(frozen=True)
class Progress:
    rounds: int  # the model's answers that ended in calls
    searched: bool  # a web_search call has its result (or was declined)
    pages: tuple[ReadPage, ...]
    unread: tuple[str, ...]  # the search's addresses no fetch_page call has named yet


def since_question(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The messages after the last question (the research turn's calls and results)."""
    last = max((index for index, message in enumerate(messages) if message.role == "user"), default=-1)
    return list(messages[last + 1:])


def pages_read(turn: Sequence[ChatMessage]) -> list[ReadPage]:
    """The pages fetch_page read in `turn`, numbered in the order they were read (what [n] cites)."""
    pages: list[ReadPage] = []
    for message in turn:
        url = untrusted_source(message.content) if message.role == "tool" and message.name == FETCH_PAGE else ""
        if url:
            title = _TITLE.search(framed_text(message.content))
            pages.append(ReadPage(len(pages) + 1, url, title.group(1).strip() if title else ""))
    return pages


def page_texts(turn: Sequence[ChatMessage]) -> dict[int, str]:
    """Page number -> the text the model read of it."""
    texts = [framed_text(message.content) for message in turn
             if message.role == "tool" and message.name == FETCH_PAGE and untrusted_source(message.content)]
    return dict(enumerate(texts, 1))


def progress(turn: Sequence[ChatMessage]) -> Progress:
    asked: set[str] = set()
    found: list[str] = []
    for message in turn:
        for call in message.tool_calls:
            if call.name == FETCH_PAGE:
                asked.add(_url_argument(call.arguments))
        if message.role == "tool" and message.name == WEB_SEARCH and untrusted_source(message.content):
            found += _RESULT_URL.findall(framed_text(message.content))
    return Progress(rounds=sum(bool(message.tool_calls) for message in turn),
                    searched=any(message.role == "tool" and message.name == WEB_SEARCH for message in turn),
                    pages=tuple(pages_read(turn)),
                    unread=tuple(url for url in dict.fromkeys(found) if url not in asked))


def next_step(messages: Sequence[ChatMessage], limits: ResearchLimits, elapsed_s: float) -> ResearchStep:
    """The round to send now: search, read one more page, or answer (a limit reached answers at once)."""
    done = progress(since_question(messages))
    room = done.rounds < limits.rounds and elapsed_s < limits.time_s
    if room and not done.searched:
        return ResearchStep("search", (SEARCH_SPEC,), WEB_SEARCH)
    if room and done.unread and len(done.pages) < limits.pages:
        return ResearchStep("read", (fetch_spec(done.unread),), FETCH_PAGE)
    cited = min(len(done.pages), 9)  # the pattern names pages 1 to 9
    if not cited:
        return ResearchStep("answer", note=NO_PAGE_NOTE)
    return ResearchStep("answer", constraint=answer_constraint(cited, limits.answer_chars),
                        note=ANSWER_NOTE.format(pages=cited), max_new_tokens=limits.answer_chars + 16)


def with_sources(answer: str, pages: Sequence[ReadPage]) -> str:
    """The answer with the pages read listed under it, by number (each a link to its page)."""
    if not pages:
        return answer
    lines = "\n".join(f"- [{page.number}] {page.title or page.url} <{page.url}>" for page in pages)
    return f"{answer.rstrip()}\n\n{SOURCES_HEAD}\n\n{lines}"


def is_research_answer(message: ChatMessage, turn: Sequence[ChatMessage]) -> bool:
    """An answer (no calls) that lists its sources after a research turn's rounds (`turn`: the messages before it)."""
    return (message.role == "assistant" and not message.tool_calls and f"\n\n{SOURCES_HEAD}\n\n- [1] " in message.content
            and any(m.role == "tool" and m.name in (WEB_SEARCH, FETCH_PAGE) for m in turn))


def clock_text(seconds: float) -> str:
    whole = max(0, int(seconds))
    return f"{whole // 60}:{whole % 60:02d}"


def status_line(limits: ResearchLimits, turn: Sequence[ChatMessage] | None, elapsed_s: float, state: str) -> str:
    """What the window shows under the input: the limits before a run; the round, pages and time during and after.
    `state`: "idle", "running", "answering", "done" or "stopped"."""
    if turn is None or state == "idle":
        return (f"Research: up to {limits.rounds} rounds · {limits.pages} pages · "
                f"{clock_text(limits.time_s)} — each call still asks you first")
    done = progress(turn)
    pages = f"{len(done.pages)} of {limits.pages} pages"
    if state == "running":
        return (f"Research: round {min(done.rounds + 1, limits.rounds)} of {limits.rounds} · {pages} · "
                f"{clock_text(elapsed_s)} of {clock_text(limits.time_s)}")
    if state == "answering":
        return f"Research: writing the answer · {pages} · {clock_text(elapsed_s)} of {clock_text(limits.time_s)}"
    head = "Research done" if state == "done" else "Research stopped"
    return f"{head}: {_count(done.rounds, 'round')} · {_count(len(done.pages), 'page')} read · {clock_text(elapsed_s)}"


def _count(number: int, thing: str) -> str:
    return f"{number} {thing}{'' if number == 1 else 's'}"


def _url_argument(arguments: str) -> str:
    try:
        values = json.loads(arguments or "{}")
    except json.JSONDecodeError:
        return ""
    url = values.get("url") if isinstance(values, dict) else None
    return url if isinstance(url, str) else ""

"""`python -m engine.bench --research` on the stand-in web, and the research plan it measures.

The model writes the query, picks the page and writes the answer; what is checked is what the plan
guarantees whatever it writes: the page read is one the search gave (fetched through the guard, the
stand-in saw it), the answer has the citation pattern, and every citation points at a fetched page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx2
import pytest

import engine.bench.cli as bench
from engine.bench.standin_web import HOST, bench_web
from engine.tools.builtin.fetch_page import PageFetcher
from engine.tools.builtin.web_search import SearxngBackend
from engine.tools.research import (
    ReadPage,
    answer_constraint,
    citations,
    citations_valid_fraction,
    fetch_spec,
    sources_text,
)

READ = [ReadPage(1, "http://news.test/page/0", "All about kettles (0)"), ReadPage(2, "http://news.test/page/3", "")]


def test_fetch_page_can_name_only_the_search_s_results() -> None:
    spec = fetch_spec(["http://a.test/1", "http://a.test/2", "http://a.test/1"])
    schema = json.loads(spec.parameters)
    assert spec.name == "fetch_page" and schema["required"] == ["url"]
    assert schema["properties"]["url"]["enum"] == ["http://a.test/1", "http://a.test/2"]


@pytest.mark.parametrize("answer, matches", [
    ("Kettles began to whistle in 1921 [1]. Electric ones came later [2].", True),
    ("Kettles began to whistle in 1921 [3].", False),  # two pages read: there is no third
    ("Kettles began to whistle in 1921.", False),  # no citation
    ("Short [1].", False),  # fewer than eight characters before it
])
def test_the_answer_pattern_cites_only_pages_read(answer: str, matches: bool) -> None:
    constraint = answer_constraint(2)
    assert constraint.kind == "regex"
    assert bool(re.fullmatch(constraint.source, answer)) is matches


def test_citations_valid_fraction_counts_citations_of_pages_read() -> None:
    assert citations("a [1] b [2] c [7]") == [1, 2, 7]
    assert citations_valid_fraction("a [1] b [2] c [7] d [2]", READ) == 0.75
    assert citations_valid_fraction("no citations", READ) is None
    assert sources_text(READ) == ("[1] All about kettles (0) <http://news.test/page/0>\n"
                                  "[2] http://news.test/page/3 <http://news.test/page/3>")


def test_the_bench_web_serves_search_and_pages_through_the_guard() -> None:
    with bench_web() as web:
        results = SearxngBackend(web.search_url()).search("kettles", 3)
        assert [r.url for r in results] == [web.url(f"/page/{n}") for n in range(3)]
        page = PageFetcher(web.guard()).run({"url": results[0].url})
        assert not page.is_error and "All about kettles" in page.text and "Privacy. Terms." not in page.text
        refused = PageFetcher(web.guard()).run({"url": f"http://127.0.0.1:{web.port}/page/0"})
        assert refused.is_error and refused.text.startswith("Refused")
        assert httpx2.get(web.url("/page/1").replace(HOST, "127.0.0.1")).status_code == 200


def test_research_mode_writes_its_figures(default_model: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "research.json"
    argv = ["--research", "--research-pages", "1", "--repeat", "1", "--threads", "1", "--model", default_model,
            "--json", str(out)]
    assert bench.main(argv) == 0
    figures = json.loads(out.read_text())["research"]
    assert figures["runs"] == 1 and figures["pages_fetched"] == 1
    assert figures["fetch_ms_p50"] > 0 and figures["extract_ms_p50"] > 0 and figures["answer_ms"] > 0
    assert re.fullmatch(answer_constraint(1).source, figures["answer"])
    assert figures["citations_valid_fraction"] == 1.0
    assert "citations pointing at fetched pages: 100%" in capsys.readouterr().out

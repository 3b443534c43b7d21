"""The user message built from attachments: whole when it fits, the best chunks with citations when not."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.documents.extract import Document, extract
from engine.documents.index import DocumentIndex
from engine.documents.prompt import Attachment, assemble, plan, read_excerpts, room_left, split_message
from engine.documents.retrieval import Hit
from tests.engine.documents.conftest import PLANTED_PAGE

QUESTION = "Where does Ottoline Brackwater keep the spare lamp oil?"


def count_words(text: str) -> int:
    """A simple counter for the fast tests; the slow one below uses the model's tokenizer."""
    return len(text.split())


def _attach(index: DocumentIndex, document: Document, count: object = count_words) -> Attachment:
    doc_id = index.add(document)
    return Attachment(doc_id, document.name, len(document.pages), document.text, count(document.text))  # type: ignore[operator]


def _search(index: DocumentIndex):  # type: ignore[no-untyped-def]
    return lambda question, doc_ids, limit: index.search(question, limit, doc_ids)


@pytest.fixture
def index(tmp_path: Path) -> DocumentIndex:
    return DocumentIndex(tmp_path / "chat.documents.sqlite")


def test_planted_sentence_from_page_217_is_in_the_prompt_with_its_citation(
        index: DocumentIndex, long_document: Document, markdown_file: Path) -> None:
    notes, book = _attach(index, extract(markdown_file)), _attach(index, long_document)
    prompt = assemble(QUESTION, [notes, book], room=2000, count_tokens=count_words, search=_search(index))
    assert prompt.whole == ("notes.md",) and prompt.searched == ("harbour.pdf",)
    first = prompt.citations[0]
    assert (first.number, first.document, first.page, first.label) == (1, "harbour.pdf", PLANTED_PAGE,
                                                                         "harbour.pdf, page 217")
    assert "[1] harbour.pdf, page 217\n" in prompt.text
    assert "copper vault" in " ".join(prompt.text.split())
    assert prompt.text.startswith("--- notes.md ---\n# Notes") and prompt.text.endswith("\n\n" + QUESTION)
    assert "Cite the ones you use by their numbers, like [1]." in prompt.text
    assert count_words(prompt.text) <= 2000


def test_whole_or_searched_is_decided_by_the_count(index: DocumentIndex, markdown_file: Path) -> None:
    notes = _attach(index, extract(markdown_file))
    assert notes.tokens == 13  # words
    assert plan([notes], room=13 + 24) == ([notes], [])  # 24: the name lines around it
    assert plan([notes], room=13 + 23) == ([], [notes])
    searched = assemble("Bread recipe?", [notes], room=38, count_tokens=count_words,  # header and end line: 23
                        search=_search(index))
    assert searched.searched == ("notes.md",) and searched.citations[0].label == "notes.md"  # one page: no page named
    assert "[1] notes.md\n## Recipes\n\nBread needs flour" in searched.text
    whole = assemble("Bread recipe?", [notes], room=100, count_tokens=count_words, search=_search(index))
    assert whole.citations == () and whole.text.startswith("--- notes.md ---") and "[1]" not in whole.text


def test_room_left_keeps_the_reserve() -> None:
    assert room_left(8192, 1000, 1024) == 6168 and room_left(2048, 2000, 512) == 0


def test_excerpts_stop_at_the_room_best_first() -> None:
    hits = [Hit(i, "a.pdf", 1, i + 1, "", "word " * 40, i) for i in range(5)]
    big = Attachment(1, "a.pdf", 9, "word " * 10000, 10000)

    def search(question: str, doc_ids: Sequence[int], limit: int) -> list[Hit]:
        assert list(doc_ids) == [1] and limit == 8
        return hits

    prompt = assemble("q", [big], room=150, count_tokens=count_words, search=search)
    assert [c.page for c in prompt.citations] == [1, 2]  # a third excerpt would not fit in 150 words
    assert assemble("q", [], room=150, count_tokens=count_words, search=search).text == "q"


def test_large_text_file_is_searched(index: DocumentIndex, tmp_path: Path) -> None:
    """~5 MB (not 50: the suite stays fast); the needle is found, the prompt stays within the room."""
    path = tmp_path / "big.txt"
    filler = "Nothing of note happens in this line of the log file.\n" * 1000
    path.write_text(filler * 47 + "The backup password hint is marmalade.\n" + filler * 47)
    assert path.stat().st_size > 5_000_000
    big = _attach(index, extract(path))
    prompt = assemble("What is the backup password hint?", [big], room=4000, count_tokens=count_words,
                      search=_search(index))
    assert prompt.searched == ("big.txt",) and "marmalade" in prompt.citations[0].text
    assert count_words(prompt.text) <= 4000


def test_real_tokenizer_decides(default_model: str, index: DocumentIndex, markdown_file: Path) -> None:
    from engine.documents.tokens import token_counter

    count = token_counter(default_model)
    try:
        notes = _attach(index, extract(markdown_file), count)
        assert notes.tokens == count(notes.text) and notes.tokens != count_words(notes.text)
        assert plan([notes], room=notes.tokens + 24) == ([notes], [])
        assert plan([notes], room=notes.tokens + 23) == ([], [notes])
    finally:
        count.close()


def test_the_excerpts_are_read_back_from_the_message(index: DocumentIndex, long_document: Document,
                                                     markdown_file: Path) -> None:
    notes, book = _attach(index, extract(markdown_file)), _attach(index, long_document)
    prompt = assemble(QUESTION, [notes, book], room=2000, count_tokens=count_words, search=_search(index))
    read = read_excerpts(prompt.text)
    assert read[1][0] == f"harbour.pdf, page {PLANTED_PAGE}" and "copper vault" in " ".join(read[1][1].split())
    chunks = ["## Tides\n\nHigh water at six.\n\n[2] is not an excerpt's line here", "Low water at noon.",
              "The ferry\n\nleaves at one."]
    hits = [Hit(i, "tides.pdf", 1, i + 3, "", text, i) for i, text in enumerate(chunks)]
    big = Attachment(1, "tides.pdf", 9, "word " * 10000, 10000)
    prompt = assemble("When is the ferry?", [big], room=500, count_tokens=count_words,
                      search=lambda question, doc_ids, limit: hits)
    assert len(prompt.citations) == 3
    assert read_excerpts(prompt.text) == {c.number: (c.label, c.text) for c in prompt.citations}
    assert read_excerpts(prompt.text)[3] == ("tides.pdf, page 5", "The ferry\n\nleaves at one.")
    assert read_excerpts(QUESTION) == {}
    whole = assemble(QUESTION, [notes], room=600, count_tokens=count_words, search=_search(index))
    assert read_excerpts(whole.text) == {}


def test_a_message_is_split_back_into_its_question_and_files(index: DocumentIndex, long_document: Document,
                                                             markdown_file: Path) -> None:
    notes, book = _attach(index, extract(markdown_file)), _attach(index, long_document)
    question = "Where is the oil?\n\nAnd who keeps it?"  # a question with a blank line of its own
    prompt = assemble(question, [notes, book], room=2000, count_tokens=count_words, search=_search(index))
    assert split_message(prompt.text) == (question, [("notes.md", "whole"), ("harbour.pdf", "searched")])
    assert read_excerpts(prompt.text)[1][1].endswith("copper\nvault.")  # the question is not in the excerpt
    whole = assemble(question, [notes], room=600, count_tokens=count_words, search=_search(index))
    assert split_message(whole.text) == (question, [("notes.md", "whole")])
    assert split_message("--- a.md ---\nno end line\n\nquestion") == ("--- a.md ---\nno end line\n\nquestion", [])
    assert split_message(question) == (question, [])

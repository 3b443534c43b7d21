"""The chunker, the FTS5 index, its resumption after a kill -9, and reciprocal rank fusion."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.documents.chunking import chunk_page
from engine.documents.extract import Document, Page
from engine.documents.index import (
    PAGES_PER_BATCH,
    DocumentIndex,
    delete_index,
    index_path,
)
from engine.documents.retrieval import fts_query, reciprocal_rank_fusion
from tests.engine.documents.conftest import PAGES, PLANTED_PAGE

QUESTION = "Where does Ottoline Brackwater keep the spare lamp oil?"


def test_chunks_cut_at_headings_with_overlap() -> None:
    text = "# Intro\n\n" + "\n\n".join(f"Paragraph {i} " + "word " * 60 for i in range(6)) + "\n\n## Next\n\nEnd."
    chunks = chunk_page(Page(7, text), chunk_chars=700, overlap_chars=100)
    assert all(chunk.page == 7 for chunk in chunks)
    assert [chunk.ordinal for chunk in chunks] == list(range(len(chunks)))
    assert chunks[-1].heading == "Next" and chunks[-1].text == "## Next\n\nEnd."
    assert chunks[0].heading == "Intro" and len(chunks) == 6  # [heading, p0, p1], then p2..p5 each with overlap
    # the start of each following chunk is the end of the one before it
    assert chunks[1].text.split("\n\n")[0] in chunks[0].text
    assert all(len(chunk.text) <= 700 for chunk in chunks)


def test_a_long_paragraph_is_cut_at_spaces() -> None:
    chunks = chunk_page(Page(1, "word " * 1000), chunk_chars=500, overlap_chars=50)
    assert len(chunks) > 8 and all(len(c.text) <= 500 and not c.text.startswith("ord") for c in chunks)


def test_fts_query_quotes_words_and_drops_small_ones() -> None:
    assert fts_query('What is "NEAR" the AND -oil?') == '"near" OR "oil"'
    assert fts_query("is the a") == ""


def test_planted_chunk_ranks_first(tmp_path: Path, long_document: Document) -> None:
    index = DocumentIndex(index_path(tmp_path, "chat"))
    doc_id = index.add(long_document)
    hits = index.search(QUESTION, limit=3)
    assert hits[0].page == PLANTED_PAGE and hits[0].doc_id == doc_id and hits[0].document == "harbour.pdf"
    assert "copper vault" in " ".join(hits[0].text.split())
    assert index.documents()[0].complete and index.documents()[0].pages == PAGES
    assert index.document(doc_id).pages[PLANTED_PAGE - 1] == long_document.pages[PLANTED_PAGE - 1]
    assert index.add(long_document) == doc_id  # the same text again is not indexed twice
    index.close()
    delete_index(tmp_path, "chat")
    assert list(tmp_path.iterdir()) == []


_KILLED_HALF_WAY = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from engine.documents.extract import extract
    from engine.documents.index import DocumentIndex
    def kill_at_half(done, total):
        if done * 2 >= total:
            os.kill(os.getpid(), signal.SIGKILL)
    DocumentIndex(Path(sys.argv[1])).add(extract(Path(sys.argv[2])), on_progress=kill_at_half)
""")


def test_an_index_killed_half_way_is_not_used_then_resumed(tmp_path: Path, long_pdf: Path,
                                                           long_document: Document) -> None:
    path = index_path(tmp_path, "chat")
    run = subprocess.run([sys.executable, "-c", _KILLED_HALF_WAY, str(path), str(long_pdf)], check=False)
    assert run.returncode == -9
    index = DocumentIndex(path)
    (cut,) = index.documents()
    assert not cut.complete and cut.pages_done % PAGES_PER_BATCH == 0 and PAGES // 2 <= cut.pages_done < PAGES
    assert index.search("Page 1 weather harbour") == []  # half an index is never searched
    resumed: list[int] = []
    doc_id = index.add(long_document, on_progress=lambda done, total: resumed.append(done))
    assert doc_id == cut.id and resumed[0] == cut.pages_done + PAGES_PER_BATCH and resumed[-1] == PAGES
    fresh = DocumentIndex(tmp_path / "fresh.sqlite")
    fresh.add(long_document)
    count = "SELECT count(*), group_concat(page) FROM (SELECT page FROM chunks ORDER BY page, ordinal)"
    assert index._db.execute(count).fetchone() == fresh._db.execute(count).fetchone()
    assert index.search(QUESTION)[0].page == PLANTED_PAGE


def test_rrf_sums_reciprocal_ranks() -> None:
    assert reciprocal_rank_fusion([[1, 2, 3], [3, 1]], k=1) == [1, 3, 2]  # 1/2+1/3, 1/4+1/2, 1/3
    assert reciprocal_rank_fusion([[5], []]) == [5]


def _concept_embed(texts: Sequence[str]) -> np.ndarray:
    """A stand-in embedding model that knows car and automobile mean the same thing."""
    concepts = (("car", "automobile", "vehicle"), ("banana", "fruit"), ("weather", "rain"))
    return np.array([[sum(text.lower().count(word) for word in words) for words in concepts] for text in texts],
                    dtype=np.float32)


def test_vectors_fused_with_bm25_find_what_words_miss(tmp_path: Path) -> None:
    document = Document("mixed.txt", "text", (Page(1, "The car is red and fast."), Page(2, "A banana is yellow."),
                                              Page(3, "Rain and weather all week; the red paint peels.")))
    index = DocumentIndex(tmp_path / "i.sqlite")
    index.add(document, embed=_concept_embed)
    assert [hit.page for hit in index.search("automobile", limit=3)] == []  # no word in common
    assert [hit.page for hit in index.search("automobile", limit=1, embed=_concept_embed)] == [1]
    fused = index.search("red automobile", limit=3, embed=_concept_embed)
    assert [hit.page for hit in index.search("red automobile", limit=3)] == [1, 3]
    assert fused[0].page == 1 and {hit.page for hit in fused} == {1, 2, 3}


def test_vectors_added_later_belong_to_one_model_at_a_time(tmp_path: Path) -> None:
    document = Document("mixed.txt", "text", (Page(1, "The car is red and fast."), Page(2, "A banana is yellow."),
                                              Page(3, "Rain and weather all week.")))
    index = DocumentIndex(tmp_path / "i.sqlite")
    index.add(document)  # indexed before embeddings were turned on: words only
    assert index.vector_model() is None
    assert index.search("automobile", limit=1, embed=_concept_embed, embed_model="concepts") == []
    done: list[tuple[int, int]] = []
    assert index.embed_missing(_concept_embed, "concepts", lambda d, t: done.append((d, t)), batch=2) == 3
    assert done == [(2, 3), (3, 3)] and index.vector_model() == "concepts"
    assert [hit.page for hit in index.search("automobile", limit=1, embed=_concept_embed, embed_model="concepts")] == [1]
    assert index.embed_missing(_concept_embed, "concepts") == 0  # nothing left to do

    def reversed_concepts(texts: Sequence[str]) -> np.ndarray:
        return _concept_embed(texts)[:, ::-1].copy()

    # another model: the first one's vectors are dropped, not compared with the new ones
    index.add(Document("more.txt", "text", (Page(1, "An automobile dealer."),)), embed=reversed_concepts,
              embed_model="reversed")
    assert index.vector_model() == "reversed"
    assert index.search("automobile", limit=5, embed=_concept_embed, embed_model="concepts") == \
        index.search("automobile", limit=5)  # the stored vectors are not this model's: words only
    assert index.embed_missing(reversed_concepts, "reversed") == 3
    assert {hit.document for hit in index.search("vehicle", limit=2, embed=reversed_concepts,
                                                  embed_model="reversed")} == {"mixed.txt", "more.txt"}
    index.close()

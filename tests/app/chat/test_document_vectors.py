"""Attached files searched by meaning as well as words, in the real window on the real default model: with
Settings' GGUF embedding model or the chat's own model every chunk gets a vector in the chat's index, a
question that shares no word with the file still gets its nearest passages, and a model that cannot embed
leaves the file searched by its words, with the reason on its chip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.chat.attachments import documents_folder
from engine.documents.embedder import GgufEmbedder
from engine.documents.index import DocumentIndex, index_path

# no word of it is in the file: BM25 finds nothing, the vectors always rank the nearest chunks
NO_SHARED_WORD = "Qzxv wplkt?"


@pytest.fixture
def long_text(tmp_path: Path) -> Path:
    paragraphs = [f"Section {n}. The harbour master counts {n} barrels of lamp oil in the copper vault, "
                  f"and writes the number {n} in the ledger before the tide turns." for n in range(1, 21)]
    path = tmp_path / "ledger.txt"
    path.write_text("\n\n".join(paragraphs), encoding="utf-8")
    return path


def attach_and_index(qtbot, tab, path: Path) -> None:  # type: ignore[no-untyped-def]
    tab.attachments.attach([path])
    qtbot.waitUntil(lambda: all(chip.doc_id is not None or chip.error for chip in tab.attachments.chips.values()),
                    timeout=120_000)
    # the chip says "searched" once the words are indexed; the vectors come after, from a model that may still be
    # loading on a busy machine: wait for the file's thread itself (it ends well before this bound)
    assert tab.attachments.worker.wait(timeout=240), "the document worker was still embedding after 240 s"


def stored_vectors(tab) -> tuple[str | None, list[int]]:  # type: ignore[no-untyped-def]
    """The index's vector model and the length of each chunk's vector (0: none)."""
    index = DocumentIndex(index_path(documents_folder(), tab.chat_id))
    try:
        rows = index._db.execute("SELECT vector FROM chunks ORDER BY id").fetchall()
        return index.vector_model(), [0 if blob is None else len(blob) // 4 for (blob,) in rows]
    finally:
        index.close()


@pytest.mark.parametrize("mode", ["gguf", "chat_model"])
def test_every_chunk_gets_a_vector_and_a_wordless_question_finds_passages(qtbot, make_window, default_model: str,  # type: ignore[no-untyped-def]
                                                                          long_text: Path, mode: str) -> None:
    window = make_window(context_length=512)
    window.settings.set("documents.embeddings", mode)
    window.settings.set("documents.embedding_model", default_model)
    tab = window.current_tab()
    attach_and_index(qtbot, tab, long_text)
    [chip] = tab.attachments.chips.values()
    assert chip.label.text().endswith(" · searched"), chip.label.text()
    model, sizes = stored_vectors(tab)
    assert model == (f"gguf:{default_model}" if mode == "gguf" else f"model:{default_model}")
    assert len(sizes) >= 3 and set(sizes) == {576}  # SmolLM2-135M's width, every chunk
    assert "\n\n[1] ledger.txt" in tab.attachments.message_text(NO_SHARED_WORD)
    window.settings.set("documents.embeddings", "off")  # by words: the same question finds nothing
    attach_and_index(qtbot, tab, long_text)
    assert "\n\n[1] ledger.txt" not in tab.attachments.message_text(NO_SHARED_WORD)


def test_a_model_that_cannot_embed_leaves_the_words(qtbot, make_window, default_model: str, long_text: Path,  # type: ignore[no-untyped-def]
                                                    tmp_path: Path) -> None:
    broken = tmp_path / "half-embedder.gguf"
    data = Path(default_model).read_bytes()
    broken.write_bytes(data[: len(data) // 3])
    window = make_window(context_length=512)
    window.settings.set("documents.embeddings", "gguf")
    window.settings.set("documents.embedding_model", str(broken))
    tab = window.current_tab()
    attach_and_index(qtbot, tab, long_text)
    [chip] = tab.attachments.chips.values()
    qtbot.waitUntil(lambda: chip.label.text().endswith(" · searched · by words only"), timeout=10_000)
    assert chip.toolTip().startswith(f"Searched by its words only: {broken} made no vectors (")
    assert stored_vectors(tab)[1] and set(stored_vectors(tab)[1]) == {0}
    assert "\n\n[1] ledger.txt" in tab.attachments.message_text("How many barrels of lamp oil?")


def test_the_worker_and_the_engine_make_the_same_vectors(qtbot, make_window, default_model: str) -> None:  # type: ignore[no-untyped-def]
    window = make_window()
    texts = ["The harbour master counts barrels.", "A recipe for bread."]
    from_engine = window.bridge.embedder(default_model)(texts)
    embedder = GgufEmbedder(default_model, threads=1)
    try:
        from_file = embedder(texts)
    finally:
        embedder.close()
    assert from_engine.shape == from_file.shape == (2, 576)
    assert np.allclose(from_engine, from_file, atol=1e-3)
    assert not np.allclose(from_file[0], from_file[1], atol=1e-2)


def test_a_file_is_searched_by_words_while_its_vectors_are_made(qtbot, tmp_path: Path, long_text: Path) -> None:  # type: ignore[no-untyped-def]
    import threading

    from app.chat.attachment_worker import DocumentWorker
    from app.chat.document_vectors import Vectors

    release, asked = threading.Event(), threading.Event()

    def slow_embed(texts):  # type: ignore[no-untyped-def]
        asked.set()
        assert release.wait(30)
        return np.ones((len(texts), 4), dtype=np.float32)

    worker = DocumentWorker(tmp_path / "chat.documents.sqlite", lambda: "", vectors=lambda: Vectors(slow_embed, "slow"))
    indexed: list[int] = []
    stages: list[str] = []
    worker.indexed.connect(lambda key, doc_id: indexed.append(doc_id))
    worker.progressed.connect(lambda key, what, share: stages.append(what))
    worker.add(0, long_text)
    qtbot.waitUntil(lambda: bool(indexed) and asked.is_set(), timeout=20_000)
    index = DocumentIndex(tmp_path / "chat.documents.sqlite")
    try:
        assert [hit.document for hit in index.search("lamp oil barrels", 1, indexed)] == ["ledger.txt"]
    finally:
        index.close()
    release.set()
    worker.wait()
    qtbot.waitUntil(lambda: len(indexed) == 2 and "embedding" in stages, timeout=10_000)
    assert indexed[0] == indexed[1]

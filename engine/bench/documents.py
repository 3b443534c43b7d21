"""`python -m engine.bench --documents`: what attaching a long PDF costs.

Indexing pages/s (reading the PDF and indexing it, what a user waits for before the document is
searched), retrieval latency per message (BM25 alone, and fused by reciprocal rank with a stand-in
embedding: a hashed bag of words in NumPy, so the fusion's own cost is measured without an
embedding model; or with --embedding-model a real GGUF one, as Settings > Documents uses: then
embedding the chunks, the vectors' pages/s, and each question's own embedding are measured), and the time to the first token on the bundled model through the real engine
with the searched excerpts in the message and without them.
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
import time
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.bench.harness import Bench
from engine.bench.report import percentile
from engine.documents.extract import extract
from engine.documents.index import DocumentIndex
from engine.documents.prompt import Attachment, assemble, room_left
from engine.protocol import ChatMessage, CloseChat, ModelConfig, SamplingParams, Submit

PLANTED_PAGE = 217
PLANTED_SENTENCE = "The lighthouse keeper Ottoline Brackwater stores the spare lamp oil in the copper vault."
QUESTION = "Where does Ottoline Brackwater keep the spare lamp oil?"
_FILLER = ("Chapter {chapter} goes on about the weather, the harbour and the daily routine of the town. "
           "Boats come in with the tide, nets are mended on the quay, and the market opens at dawn. ")
_QUERIES = ("weather in the harbour", "nets mended on the quay", "market at dawn", "boats and the tide",
            "daily routine of the town", QUESTION, "copper vault lamp oil", "chapter about the weather")
_EMBED_DIMENSIONS = 256


def write_sample_pdf(path: Path, pages: int, planted_page: int = PLANTED_PAGE) -> Path:
    """A PDF of `pages` pages of filler with PLANTED_SENTENCE on `planted_page` (fpdf2: pypdf cannot write text)."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=11)
    for number in range(1, pages + 1):
        pdf.add_page()
        text = f"Page {number}. " + _FILLER.format(chapter=number) * 3
        if number == planted_page:
            text += PLANTED_SENTENCE
        # text() per wrapped line: multi_cell's layout takes ~25x longer for 300 pages
        for line_number, line in enumerate(textwrap.wrap(text, 90)):
            pdf.text(15, 20 + 6 * line_number, line)
    pdf.output(str(path))
    return path


def hashed_bag_of_words(texts: Sequence[str]) -> np.ndarray:
    """A stand-in embedding: word counts hashed into a fixed number of dimensions."""
    matrix = np.zeros((len(texts), _EMBED_DIMENSIONS), dtype=np.float32)
    for row, text in enumerate(texts):
        for word in text.lower().split():
            matrix[row, zlib.crc32(word.encode()) % _EMBED_DIMENSIONS] += 1.0
    return matrix


def measure_documents(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="hearth-bench-documents-") as folder:
        pdf = write_sample_pdf(Path(folder) / "harbour.pdf", args.pages, min(PLANTED_PAGE, args.pages))
        started = time.perf_counter()
        document = extract(pdf)
        index = DocumentIndex(Path(folder) / "bench.documents.sqlite")
        doc_id = index.add(document)
        index_s = time.perf_counter() - started
        embed, close = _embedding(args)
        started = time.perf_counter()
        chunks = index.embed_missing(embed, args.embedding_model or "hashed")
        vectors_s = time.perf_counter() - started
        bm25 = _latencies(lambda query: index.search(query, 8, [doc_id]))
        fused = _latencies(lambda query: index.search(query, 8, [doc_id], embed=embed),
                           rounds=25 if not args.embedding_model else 3)
        close()
        ttft = _ttft(args, index, document.text, doc_id, len(document.pages))
        index.close()
    return {"model": args.model, "documents": {
        "pages": args.pages, "index_pages_per_s": round(args.pages / index_s, 1),
        "embedding_model": args.embedding_model or "hashed bag of words (stand-in)", "chunks": chunks,
        "vectors_pages_per_s": round(args.pages / vectors_s, 1),
        "retrieval_ms_p50": round(percentile(bm25, 0.5), 3), "retrieval_ms_p99": round(percentile(bm25, 0.99), 3),
        "fused_retrieval_ms_p50": round(percentile(fused, 0.5), 3),
        "fused_retrieval_ms_p99": round(percentile(fused, 0.99), 3),
        **ttft,
    }}


def _embedding(args: argparse.Namespace) -> tuple[Any, Any]:
    """The embedding to fuse with, and how to let it go."""
    if not args.embedding_model:
        return hashed_bag_of_words, lambda: None
    from engine.documents.embedder import GgufEmbedder

    embedder = GgufEmbedder(args.embedding_model, threads=args.threads or 2)
    return embedder, embedder.close


def _latencies(search: Any, rounds: int = 25) -> list[float]:
    times = []
    for _ in range(rounds):
        for query in _QUERIES:
            started = time.perf_counter()
            search(query)
            times.append((time.perf_counter() - started) * 1000)
    return times


def _ttft(args: argparse.Namespace, index: DocumentIndex, text: str, doc_id: int, pages: int) -> dict[str, Any]:
    """First-token times, best of --repeat, of the question alone and with the PDF's excerpts."""
    from engine.documents.tokens import token_counter

    count = token_counter(args.model)
    config = ModelConfig(path=args.model, threads=args.threads, slots=2)
    bench = Bench()
    bench.loop.start()
    try:
        info = bench.load(config)
        attachment = Attachment(doc_id, "harbour.pdf", pages, text, count(text))
        room = room_left(info.context_length, count(QUESTION) + 16, 512)
        prompt = assemble(QUESTION, [attachment], room, count, lambda q, ids, k: index.search(q, k, ids))
        prompt_tokens = count(prompt.text)
        sampling = SamplingParams(max_new_tokens=4)
        bench.serve([Submit("documents-warm-up", (ChatMessage("user", "Hello"),), sampling)])  # the first turn pays set-up costs
        bench.loop.send(CloseChat("documents-warm-up"))
        times: dict[str, list[float]] = {"with": [], "without": []}
        for round_ in range(args.repeat):
            for name, content in (("without", QUESTION), ("with", prompt.text)):
                submit = Submit(f"documents-{name}-{round_}", (ChatMessage("user", content),), sampling)
                [turn] = bench.serve([submit])
                times[name].append(turn.ttft_s * 1000)
                bench.loop.send(CloseChat(submit.chat_id))  # its slot and cache: the next round reads afresh
    finally:
        bench.loop.shutdown()
        count.close()
    return {"ttft_ms_with": round(min(times["with"]), 1), "ttft_ms_without": round(min(times["without"]), 1),
            "prompt_tokens_with": prompt_tokens, "citations": len(prompt.citations)}


def documents_table(result: dict[str, Any]) -> str:
    figures = result["documents"]
    return "\n".join([
        f"documents: {figures['pages']}-page PDF read and indexed at {figures['index_pages_per_s']:.0f} pages/s",
        (f"vectors ({figures['embedding_model']}): {figures['chunks']} chunks at "
         f"{figures['vectors_pages_per_s']:.1f} pages/s"),
        (f"retrieval per message: BM25 p50 {figures['retrieval_ms_p50']:.2f} ms, p99 {figures['retrieval_ms_p99']:.2f} ms; "
         f"fused p50 {figures['fused_retrieval_ms_p50']:.2f} ms, p99 {figures['fused_retrieval_ms_p99']:.2f} ms"),
        (f"first token: {figures['ttft_ms_without']:.0f} ms without the document, {figures['ttft_ms_with']:.0f} ms with "
         f"its {figures['citations']} excerpts ({figures['prompt_tokens_with']} tokens)"),
    ])

"""A chat's documents in a SQLite file of their own: pages, chunks, an FTS5 index, and vectors if given.

One file per chat (`index_path`) rather than tables in the history database: an index can be many
times the size of the conversation, it is written by a background thread while the history writes
its own, and deleting the chat is deleting one file. A document is indexed in batches of pages, each
batch one transaction that also advances `pages_done`; `complete` is set in the last one. So after a
kill -9 the file holds whole batches only, a document that is not complete is never searched, and
adding the same text again resumes after the last batch.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.documents.chunking import chunk_page
from engine.documents.extract import Document, Page
from engine.documents.retrieval import Embed, Hit, fts_query, reciprocal_rank_fusion

Progress = Callable[[int, int], None]
PAGES_PER_BATCH = 16
_CANDIDATES = 50  # how deep each ranking goes before fusion

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS documents (
        id INTEGER PRIMARY KEY, name TEXT NOT NULL, kind TEXT NOT NULL, digest TEXT NOT NULL UNIQUE,
        pages INTEGER NOT NULL, pages_done INTEGER NOT NULL DEFAULT 0,
        complete INTEGER NOT NULL DEFAULT 0, added REAL NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS pages (
        doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        number INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (doc_id, number))""",
    """CREATE TABLE IF NOT EXISTS chunks (
        id INTEGER PRIMARY KEY, doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
        page INTEGER NOT NULL, ordinal INTEGER NOT NULL, heading TEXT NOT NULL, text TEXT NOT NULL,
        vector BLOB)""",
    "CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id, page)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
        heading, text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER IF NOT EXISTS chunks_fts_insert AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts(rowid, heading, text) VALUES (new.id, new.heading, new.text); END""",
    # whose vectors chunks.vector holds: vectors of two models are not comparable, so there is one at a time
    """CREATE TABLE IF NOT EXISTS vector_model (
        one INTEGER PRIMARY KEY CHECK (one = 1), model TEXT NOT NULL)""",
    """CREATE TRIGGER IF NOT EXISTS chunks_fts_delete AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts(chunks_fts, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text);
    END""",
)


@dataclass(frozen=True)
class IndexedDocument:
    id: int
    name: str
    kind: str
    pages: int
    pages_done: int
    complete: bool


def index_path(folder: Path, chat_id: str) -> Path:
    return Path(folder) / f"{chat_id}.documents.sqlite"


def delete_index(folder: Path, chat_id: str) -> None:
    """Delete a chat's documents with the chat (the WAL's side files too)."""
    base = index_path(folder, chat_id)
    for path in (base, base.with_name(base.name + "-wal"), base.with_name(base.name + "-shm")):
        path.unlink(missing_ok=True)


def digest_of(document: Document) -> str:
    content = hashlib.sha256(document.name.encode())
    for page in document.pages:
        content.update(b"\f" + page.text.encode())
    return content.hexdigest()


class DocumentIndex:
    """One chat's index; one instance per thread (SQLite connections are not shared between threads)."""

    def __init__(self, path: Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")  # the window reads while the worker writes
        self._db.execute("PRAGMA foreign_keys=ON")
        for statement in _SCHEMA:
            self._db.execute(statement)

    def close(self) -> None:
        self._db.close()

    def add(self, document: Document, on_progress: Progress | None = None, embed: Embed | None = None,
            embed_model: str = "") -> int:
        """Index `document` (or finish indexing it, if an earlier run was cut short); its id. With `embed`, each
        chunk gets its vector as it is written (`embed_model` names the model; see embed_missing)."""
        if embed is not None:
            self._use_vector_model(embed_model)
        digest = digest_of(document)
        row = self._db.execute("SELECT id, pages_done, complete FROM documents WHERE digest = ?", (digest,)).fetchone()
        if row is None:
            cursor = self._db.execute(
                "INSERT INTO documents(name, kind, digest, pages, added) VALUES (?, ?, ?, ?, ?)",
                (document.name, document.kind, digest, len(document.pages), time.time()))
            doc_id, done, complete = int(cursor.lastrowid or 0), 0, False
        else:
            doc_id, done, complete = int(row[0]), int(row[1]), bool(row[2])
        total = len(document.pages)
        while not complete:
            batch = document.pages[done:done + PAGES_PER_BATCH]
            done += len(batch)
            self._write_batch(doc_id, batch, done, done >= total, embed)
            complete = done >= total
            if on_progress is not None:
                on_progress(done, total)
        return doc_id

    def _write_batch(self, doc_id: int, pages: Sequence[Page], done: int, last: bool, embed: Embed | None) -> None:
        chunks = [chunk for page in pages for chunk in chunk_page(page)]
        vectors = _vectors(embed, [chunk.text for chunk in chunks]) if embed is not None and chunks else None
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO pages VALUES (?, ?, ?)",
                                 [(doc_id, page.number, page.text) for page in pages])
            self._db.executemany(
                "INSERT INTO chunks(doc_id, page, ordinal, heading, text, vector) VALUES (?, ?, ?, ?, ?, ?)",
                [(doc_id, c.page, c.ordinal, c.heading, c.text, None if vectors is None else vectors[i].tobytes())
                 for i, c in enumerate(chunks)])
            self._db.execute("UPDATE documents SET pages_done = ?, complete = ? WHERE id = ?", (done, int(last), doc_id))

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def vector_model(self) -> str | None:
        """The model whose vectors the chunks hold; None before any."""
        row = self._db.execute("SELECT model FROM vector_model").fetchone()
        return None if row is None else str(row[0])

    def _use_vector_model(self, model: str) -> None:
        """From now on vectors are `model`'s: another model's are dropped (they cannot be compared with its)."""
        if self.vector_model() == model:
            return
        with self._transaction():
            self._db.execute("UPDATE chunks SET vector = NULL WHERE vector IS NOT NULL")
            self._db.execute("INSERT OR REPLACE INTO vector_model(one, model) VALUES (1, ?)", (model,))

    def embed_missing(self, embed: Embed, model: str, on_progress: Progress | None = None,
                      batch: int = 32) -> int:
        """Give every chunk a vector from `model` (the chunks indexed without one, or with another model's);
        resumable like indexing: each batch is one transaction. The number of chunks embedded."""
        self._use_vector_model(model)
        missing = [row[0] for row in self._db.execute("SELECT id FROM chunks WHERE vector IS NULL ORDER BY id")]
        for start in range(0, len(missing), batch):
            ids = missing[start:start + batch]
            marks = ",".join("?" * len(ids))
            texts = [row[0] for row in self._db.execute(f"SELECT text FROM chunks WHERE id IN ({marks}) ORDER BY id", ids)]
            vectors = _vectors(embed, texts)
            with self._transaction():
                self._db.executemany("UPDATE chunks SET vector = ? WHERE id = ?",
                                     [(vectors[i].tobytes(), chunk_id) for i, chunk_id in enumerate(ids)])
            if on_progress is not None:
                on_progress(start + len(ids), len(missing))
        return len(missing)

    def documents(self) -> list[IndexedDocument]:
        rows = self._db.execute("SELECT id, name, kind, pages, pages_done, complete FROM documents ORDER BY id")
        return [IndexedDocument(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

    def document(self, doc_id: int) -> Document:
        """A document's text as stored (the chat restored after a restart needs no source file)."""
        name, kind = self._db.execute("SELECT name, kind FROM documents WHERE id = ?", (doc_id,)).fetchone()
        rows = self._db.execute("SELECT number, text FROM pages WHERE doc_id = ? ORDER BY number", (doc_id,))
        return Document(name, kind, tuple(Page(number, text) for number, text in rows))

    def remove(self, doc_id: int) -> None:
        with self._transaction():
            self._db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            self._db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))

    def search(self, query: str, limit: int = 5, doc_ids: Sequence[int] | None = None,
               embed: Embed | None = None, embed_model: str | None = None) -> list[Hit]:
        """The best chunks of complete documents for `query`: BM25, fused with vectors when `embed` is given
        (and, where `embed_model` names it, only if the stored vectors are that model's)."""
        allowed = self._complete_ids(doc_ids)
        if not allowed:
            return []
        rankings = [self._bm25(query, allowed)]
        if embed is not None and (embed_model is None or embed_model == self.vector_model()):
            rankings.append(self._nearest(embed, query, allowed))
        order = reciprocal_rank_fusion(rankings) if len(rankings) > 1 else rankings[0]
        return self._hits(order[:limit])

    def _complete_ids(self, doc_ids: Sequence[int] | None) -> list[int]:
        ids = [row[0] for row in self._db.execute("SELECT id FROM documents WHERE complete = 1")]
        return [i for i in ids if doc_ids is None or i in doc_ids]

    def _bm25(self, query: str, allowed: list[int]) -> list[int]:
        match = fts_query(query)
        if not match:
            return []
        marks = ",".join("?" * len(allowed))
        rows = self._db.execute(
            f"SELECT chunks.id FROM chunks_fts JOIN chunks ON chunks.id = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? AND chunks.doc_id IN ({marks}) "
            f"ORDER BY bm25(chunks_fts, 2.0, 1.0) LIMIT ?", (match, *allowed, _CANDIDATES))
        return [row[0] for row in rows]

    def _nearest(self, embed: Embed, query: str, allowed: list[int]) -> list[int]:
        marks = ",".join("?" * len(allowed))
        rows = self._db.execute(
            f"SELECT id, vector FROM chunks WHERE vector IS NOT NULL AND doc_id IN ({marks})", allowed).fetchall()
        if not rows:
            return []
        matrix = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in rows])
        scores = matrix @ _vectors(embed, [query])[0]
        best = np.argsort(-scores, kind="stable")[:_CANDIDATES]
        return [rows[i][0] for i in best]

    def _hits(self, chunk_ids: list[int]) -> list[Hit]:
        hits = []
        for rank, chunk_id in enumerate(chunk_ids):
            row = self._db.execute(
                "SELECT documents.name, chunks.doc_id, chunks.page, chunks.heading, chunks.text "
                "FROM chunks JOIN documents ON documents.id = chunks.doc_id WHERE chunks.id = ?", (chunk_id,)).fetchone()
            hits.append(Hit(chunk_id, row[0], row[1], row[2], row[3], row[4], rank))
        return hits


def _vectors(embed: Embed, texts: list[str]) -> np.ndarray:
    """Unit-length float32 rows, so a dot product is the cosine."""
    matrix = np.asarray(embed(texts), dtype=np.float32).reshape(len(texts), -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on an error (the connection is in autocommit mode)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")

"""Reading, counting and indexing attached files off the GUI thread, one short thread per file.

A file is read (engine/documents/extract.py), its text counted with the loaded model's own
tokenizer (a vocabulary-only load, made once per model and kept), then indexed into the chat's
index file, and, where Settings asks for it, its chunks embedded (app/chat/document_vectors.py). Each
step reports through a Qt signal, queued to the GUI thread: the chip can say "whole" as soon as the
text is counted, while a long PDF is still being indexed. Vectors that cannot be made leave the file
searched by its words, and the chip says why.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.chat.document_vectors import Vectors
from engine.documents.extract import ExtractionError, extract
from engine.documents.index import DocumentIndex
from engine.documents.prompt import CountTokens
from engine.documents.tokens import token_counter

log = logging.getLogger(__name__)


def approximate_count(text: str) -> int:
    """Four characters a token: only when no model's tokenizer can be read (none loaded, a remote one)."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class ReadFile:
    key: int
    name: str
    pages: int
    text: str
    tokens: int
    exact: bool  # counted with the model's tokenizer, not approximated


class DocumentWorker(QObject):
    progressed = Signal(int, str, float)  # key, "reading" or "indexing", share done 0..1
    read = Signal(object)  # ReadFile
    indexed = Signal(int, int)  # key, document id in the chat's index
    failed = Signal(int, str)  # key, the message for the chip
    words_only = Signal(int, str)  # key, why its chunks have no vectors (they are searched by words)

    def __init__(self, index_file: Path, model_path: Callable[[], str], parent: QObject | None = None,
                 vectors: Callable[[], Vectors | None] = lambda: None) -> None:
        super().__init__(parent)
        self._index_file = index_file
        self._model_path = model_path
        self._vectors = vectors  # read on the GUI thread when a file is added
        self._threads: list[threading.Thread] = []
        self._counters: dict[str, CountTokens] = {}
        self._lock = threading.Lock()  # one thread loads a model's vocabulary; the others wait for it
        self._embedding = threading.Lock()  # one embedding job at a time: they share the model

    def add(self, key: int, path: Path) -> None:
        model, vectors = self._model_path(), self._vectors()
        thread = threading.Thread(target=self._work, args=(key, path, model, vectors), name="hearth-documents",
                                  daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def counter(self) -> tuple[CountTokens, bool]:
        """The loaded model's counter if it is ready (GUI thread: never loads), else the approximation."""
        found = self._counters.get(self._model_path())
        return (found, True) if found is not None else (approximate_count, False)

    def wait(self, timeout: float = 30.0) -> None:
        for thread in self._threads:
            thread.join(timeout)
        self._threads = []

    def _work(self, key: int, path: Path, model: str, vectors: Vectors | None) -> None:
        try:
            document = extract(path, on_progress=lambda done, total: self.progressed.emit(key, "reading", done / total))
            count, exact = self._counter_for(model)
            self.read.emit(ReadFile(key, document.name, len(document.pages), document.text, count(document.text), exact))
            index = DocumentIndex(self._index_file)
            try:
                doc_id = index.add(document, lambda done, total: self.progressed.emit(key, "indexing", done / total))
                self.indexed.emit(key, doc_id)  # searched by its words from now on
                if vectors is not None:
                    self._embed(key, index, vectors)
                    self.indexed.emit(key, doc_id)  # and by meaning: "embedding 40%" leaves the chip
            finally:
                index.close()
        except ExtractionError as error:
            self.failed.emit(key, str(error))
        except Exception as error:  # a bug or a full disk: a sentence on the chip, never a dead window
            log.exception("attaching %s failed", path)
            self.failed.emit(key, f"{path.name}: could not be attached ({error}).")

    def _embed(self, key: int, index: DocumentIndex, vectors: Vectors) -> None:
        """Vectors for every chunk still without this model's (the new file's, and any earlier file's)."""
        try:
            with self._embedding:
                index.embed_missing(vectors.embed, vectors.name,
                                    lambda done, total: self.progressed.emit(key, "embedding", done / total))
        except Exception as error:  # a model that cannot embed: the file is still searched by its words
            log.warning("no vectors for %s", vectors.name, exc_info=True)
            self.words_only.emit(key, f"Searched by its words only: {vectors.name.partition(':')[2]} made no "
                                      f"vectors ({error}).")

    def _counter_for(self, model: str) -> tuple[CountTokens, bool]:
        if not model or model.startswith(("http://", "https://")):
            return approximate_count, False
        with self._lock:
            if model not in self._counters:
                try:
                    self._counters[model] = token_counter(model)
                except Exception:  # a tokenizer that cannot be read: counted roughly rather than not at all
                    log.warning("no tokenizer for %s: tokens are approximated", model, exc_info=True)
                    return approximate_count, False
            return self._counters[model], True

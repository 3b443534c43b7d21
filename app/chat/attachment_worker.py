"""Reading, counting and indexing attached files off the GUI thread, one short thread per file.

A file is read (engine/documents/extract.py), its text counted with the loaded model's own
tokenizer (a vocabulary-only load, made once per model and kept), then indexed into the chat's
index file, and, where Settings asks for it, its chunks embedded (app/chat/document_vectors.py). Each
step reports through a Qt signal, queued to the GUI thread: the chip can say "whole" as soon as the
text is counted, while a long PDF is still being indexed. Vectors that cannot be made leave the file
searched by its words, and the chip says why. A picture's prompt tokens are counted the same way, off the
GUI thread, by the model's own processor (engine/picture_tokens.py), so its chip shows them before sending.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEventLoop, QObject, QTimer, Signal

from app.chat.document_vectors import Vectors
from app.misc.thread_relay import emit_from_thread
from engine.documents.extract import ExtractionError, extract
from engine.documents.index import DocumentIndex
from engine.documents.prompt import CountTokens
from engine.documents.tokens import token_counter
from engine.picture_tokens import CountPicture, picture_counter
from engine.protocol import ImagePart

log = logging.getLogger(__name__)
PREPARE_TIMEOUT_MS = 300_000  # a big embedding model from a slow disk; past it the question goes by words


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
    vectors_prepared = Signal(str, str)  # the vectors' name, and why they cannot be made ("" : ready)
    picture_counted = Signal(int, str, int)  # key, the model path it was counted for, prompt tokens

    def __init__(self, index_file: Path, model_path: Callable[[], str], parent: QObject | None = None,
                 vectors: Callable[[], Vectors | None] = lambda: None) -> None:
        super().__init__(parent)
        self._index_file = index_file
        self._model_path = model_path
        self._vectors = vectors  # read on the GUI thread when a file is added
        self._threads: list[threading.Thread] = []
        self._counters: dict[str, CountTokens] = {}
        self._picture_counters: dict[str, CountPicture | None] = {}
        self._lock = threading.Lock()  # one thread loads a model's vocabulary; the others wait for it
        self._embedding = threading.Lock()  # one embedding job at a time: they share the model
        self._waiting = False  # a question is waiting for its vectors' model (wait_until_prepared)

    def add(self, key: int, path: Path) -> None:
        model, vectors = self._model_path(), self._vectors()
        thread = threading.Thread(target=self._work, args=(key, path, model, vectors), name="hearth-documents",
                                  daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def count_picture(self, key: int, image: ImagePart) -> None:
        """Count the picture's prompt tokens with the model's processor in a thread; picture_counted says how many
        (nothing where the model's pictures cannot be counted here: a GGUF, a remote model)."""
        thread = threading.Thread(target=self._count_picture, args=(key, image, self._model_path()),
                                  name="hearth-picture-count", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _count_picture(self, key: int, image: ImagePart, model: str) -> None:
        try:
            from PIL import Image

            with self._lock:
                if model not in self._picture_counters:
                    self._picture_counters[model] = picture_counter(model)
                counter = self._picture_counters[model]
            if counter is not None:
                with Image.open(io.BytesIO(image.data)) as picture:
                    size = picture.size
                emit_from_thread(self, "picture_counted", key, model, counter(*size))
        except Exception:  # a processor that cannot count: the chip goes without a count, the engine still says
            log.warning("the picture's tokens for %s could not be counted", model, exc_info=True)

    def prepare(self, vectors: Vectors) -> None:
        """Load what `vectors` needs in a thread of its own (the GUI thread never does); vectors_prepared says when."""
        thread = threading.Thread(target=self._prepare, args=(vectors,), name="hearth-embedder", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def wait_until_prepared(self, vectors: Vectors, timeout_ms: int = PREPARE_TIMEOUT_MS) -> bool:
        """Whether `vectors` can embed now, loading its model in a worker thread first if need be (after a
        restart, the first question's). The caller waits in a local event loop, so the window keeps painting
        and streaming meanwhile; a second caller while one waits is told False (it goes by words)."""
        if vectors.ready():
            return True
        if self._waiting:
            return False
        loop, outcome, timer = QEventLoop(), [], QTimer(singleShot=True, interval=timeout_ms)
        timer.timeout.connect(loop.quit)

        def on_prepared(name: str, error: str) -> None:
            if name == vectors.name:
                outcome.append(error)
                loop.quit()

        self.vectors_prepared.connect(on_prepared)
        self._waiting = True
        try:
            self.prepare(vectors)
            timer.start()
            loop.exec()
        finally:
            timer.stop()
            self._waiting = False
            self.vectors_prepared.disconnect(on_prepared)
        return outcome == [""]

    def _prepare(self, vectors: Vectors) -> None:
        try:
            vectors.prepare()
        except Exception as error:  # a model that cannot embed: the question is searched by its words
            log.warning("no vectors for %s", vectors.name, exc_info=True)
            emit_from_thread(self, "vectors_prepared", vectors.name, str(error) or type(error).__name__)
        else:
            emit_from_thread(self, "vectors_prepared", vectors.name, "")

    def counter(self) -> tuple[CountTokens, bool]:
        """The loaded model's counter if it is ready (GUI thread: never loads), else the approximation."""
        found = self._counters.get(self._model_path())
        return (found, True) if found is not None else (approximate_count, False)

    def wait(self, timeout: float = 30.0) -> bool:
        """Join the files' threads (each up to `timeout` seconds); whether every one has ended."""
        for thread in self._threads:
            thread.join(timeout)
        ended = not any(thread.is_alive() for thread in self._threads)
        self._threads = []
        return ended

    def _work(self, key: int, path: Path, model: str, vectors: Vectors | None) -> None:
        try:
            document = extract(path, on_progress=lambda done, total: self._progress(key, "reading", done / total))
            count, exact = self._counter_for(model)
            read = ReadFile(key, document.name, len(document.pages), document.text, count(document.text), exact)
            emit_from_thread(self, "read", read)
            index = DocumentIndex(self._index_file)
            try:
                doc_id = index.add(document, lambda done, total: self._progress(key, "indexing", done / total))
                emit_from_thread(self, "indexed", key, doc_id)  # searched by its words from now on
                if vectors is not None:
                    self._embed(key, index, vectors)
                    emit_from_thread(self, "indexed", key, doc_id)  # and by meaning: "embedding 40%" leaves the chip
            finally:
                index.close()
        except ExtractionError as error:
            emit_from_thread(self, "failed", key, str(error))
        except Exception as error:  # a bug or a full disk: a sentence on the chip, never a dead window
            log.exception("attaching %s failed", path)
            emit_from_thread(self, "failed", key, f"{path.name}: could not be attached ({error}).")

    def _progress(self, key: int, stage: str, share: float) -> None:
        emit_from_thread(self, "progressed", key, stage, share)

    def _embed(self, key: int, index: DocumentIndex, vectors: Vectors) -> None:
        """Vectors for every chunk still without this model's (the new file's, and any earlier file's)."""
        try:
            with self._embedding:
                vectors.prepare()  # even with nothing missing: the next question embeds with it, on the GUI thread
                index.embed_missing(vectors.embed, vectors.name,
                                    lambda done, total: self._progress(key, "embedding", done / total))
        except Exception as error:  # a model that cannot embed: the file is still searched by its words
            log.warning("no vectors for %s", vectors.name, exc_info=True)
            emit_from_thread(self, "words_only", key,
                             f"Searched by its words only: {vectors.name.partition(':')[2]} made no vectors ({error}).")

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

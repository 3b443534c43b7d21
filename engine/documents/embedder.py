"""Vectors for attached documents from a GGUF embedding model, in the document worker's own thread.

Any GGUF llama.cpp reads works (embedding models such as nomic-embed-text or bge, or a chat model), as
llama-server's --embedding does: the model is loaded on the CPU, apart from the engine's chat models, with
one mean-pooling context (engine/runners/llamacpp/embeddings.py). A chunk longer than the context is cut
to it (the start of a chunk is its heading and first lines). Loaded once per path and kept: indexing is
a background job, and the next document or question reuses it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)
MAX_TOKENS = 512  # what embedding models are trained on (BERT's 512); chunks are shorter than that
_shared: dict[str, GgufEmbedder] = {}
_shared_lock = threading.Lock()  # held while one loads: a second asker waits for it rather than load it twice


class GgufEmbedder:
    """`embedder(texts)` is an (n, d) array of unit-length vectors, one row per text."""

    def __init__(self, path: str | Path, threads: int = 2, max_tokens: int = MAX_TOKENS) -> None:
        import llama_cpp

        from engine.runners.base import RunnerError
        from engine.runners.llamacpp.embeddings import LlamaEmbedder
        from engine.runners.llamacpp.load import check_file, extra_buffers_usable, llama_log, load_failure

        self._llama = llama_cpp
        file = check_file(str(path))
        log = llama_log()
        mark = log.mark()
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = 0  # the GPU is the chat models'
        params.use_extra_bufts = extra_buffers_usable()  # as the runner: where AMX faults, none
        model = llama_cpp.llama_model_load_from_file(str(file).encode("utf-8"), params)
        if not model:
            raise RunnerError(load_failure(file, log.errors_since(mark)))
        self._model: int | None = int(model)
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        try:
            self._embedder = LlamaEmbedder(self._model, max_tokens, threads)
        except BaseException:
            llama_cpp.llama_model_free(model)
            raise
        self._lock = threading.Lock()  # the worker's threads share one context
        self.path = str(file)
        self.memory_bytes = embedder_bytes(self.path)  # what it holds, for the gauge

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return np.array([self._embedder.embed(self._tokens(text)) for text in texts], dtype=np.float32)

    def _tokens(self, text: str) -> list[int]:
        data = text.encode("utf-8") or b" "
        size = len(data) + 8
        tokens = (self._llama.llama_token * size)()
        count = self._llama.llama_tokenize(self._vocab, data, len(data), tokens, size, True, False)
        return list(tokens[: max(count, 0)])[: self._embedder.max_tokens] or [0]

    def close(self) -> None:
        with self._lock:
            self._embedder.close()
            if self._model:
                self._llama.llama_model_free(self._model)
                self._model = None


def embedder_bytes(path: str) -> int:
    """The memory estimate's figure for `path` loaded as the embedder (its file, one context of MAX_TOKENS);
    0 where its header cannot be read."""
    from engine.catalog.description import ModelReadError
    from engine.catalog.here import total_ram
    from engine.catalog.memory import embedding_model_estimate
    from engine.catalog.models import describe

    try:
        return embedding_model_estimate(describe(path), total_ram(), MAX_TOKENS).total_bytes
    except (ModelReadError, OSError, ValueError) as error:
        log.info("no memory estimate for the embedding model %s: %s", path, error)
        return 0


def shared_embedder(path: str) -> GgufEmbedder:
    """The embedder of `path`, loaded by the first thread that asks (the document worker's) and kept for every tab.
    Blocks while another thread loads it: never call it on the GUI thread before `loaded_embedder` says it is in."""
    with _shared_lock:
        found = _shared.get(path)
        if found is None:
            found = _shared[path] = GgufEmbedder(path)
        return found


def loaded_embedder(path: str) -> GgufEmbedder | None:
    """The embedder of `path` if it is loaded; never waits, never loads."""
    return _shared.get(path)


def loaded_embedders() -> list[GgufEmbedder]:
    return list(_shared.values())


def close_embedders() -> None:
    """Free every shared embedder (at exit, and in tests: the next asker loads it again, as after a restart)."""
    with _shared_lock:
        for embedder in _shared.values():
            embedder.close()
        _shared.clear()

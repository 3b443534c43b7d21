"""Vectors for attached documents from a GGUF embedding model, in the document worker's own thread.

Any GGUF llama.cpp reads works (embedding models such as nomic-embed-text or bge, or a chat model), as
llama-server's --embedding does: the model is loaded on the CPU, apart from the engine's chat models, with
one mean-pooling context (engine/runners/llamacpp/embeddings.py). A chunk longer than the context is cut
to it (the start of a chunk is its heading and first lines). Loaded once per path and kept: indexing is
a background job, and the next document or question reuses it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

MAX_TOKENS = 512  # what embedding models are trained on (BERT's 512); chunks are shorter than that


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

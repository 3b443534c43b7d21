"""Embeddings from a llama.cpp model: a context of its own in embeddings mode, pooled as the model says.

The chats' context computes logits and keeps each chat's cache; an embedding wants
neither, and pooling needs the whole text in one physical batch. So the runner
makes this second context on the first request (weights shared, a small cache
of one text's length) and frees it with the model. The pooling is the one the GGUF
names (`{arch}.pooling_type`: CLS for bge, the last token for Qwen3-Embedding, mean
for nomic), as llama-server reads it; a chat model names none and is mean-pooled.
Vectors are scaled to unit length, as OpenAI's and llama-server's are, so a dot
product is the cosine.
"""

from __future__ import annotations

from typing import Sequence

import llama_cpp
import numpy as np

from engine.runners.base import RunnerError
from engine.runners.llamacpp.batch import put_tokens
from engine.runners.llamacpp.info import meta
from engine.runners.vectors import unit_length


POOLINGS = {llama_cpp.LLAMA_POOLING_TYPE_MEAN: "mean", llama_cpp.LLAMA_POOLING_TYPE_CLS: "cls",
            llama_cpp.LLAMA_POOLING_TYPE_LAST: "last"}


def pooling_of(model: int) -> int:
    """The pooling the GGUF names; mean where it names none (a generative model) or one not for vectors
    (rank: a reranker's score)."""
    architecture = meta(model, "general.architecture") or ""
    try:
        named = int(meta(model, f"{architecture}.pooling_type") or -1)
    except ValueError:
        named = -1
    return named if named in POOLINGS else llama_cpp.LLAMA_POOLING_TYPE_MEAN


class LlamaEmbedder:
    """One context with embeddings on and the model's pooling, for texts of up to `max_tokens` tokens."""

    def __init__(self, model: int, max_tokens: int, threads: int) -> None:
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = params.n_batch = params.n_ubatch = max_tokens
        params.n_seq_max = 1
        params.n_threads = params.n_threads_batch = threads
        params.embeddings = True
        params.pooling_type = self.pooling = pooling_of(model)
        params.no_perf = True
        context = llama_cpp.llama_init_from_model(model, params)
        if not context:
            raise RunnerError("llama.cpp could not make a context for embeddings with this model.")
        self._context: int | None = int(context)
        self._memory = llama_cpp.llama_get_memory(context)
        self._size = int(llama_cpp.llama_model_n_embd(model))
        self.max_tokens = int(llama_cpp.llama_n_ctx(context))
        self._batch: llama_cpp.llama_batch | None = llama_cpp.llama_batch_init(self.max_tokens, 0, 1)

    def embed(self, tokens: Sequence[int]) -> list[float]:
        if self._context is None or self._batch is None:
            raise RunnerError("The model was closed.")
        if not tokens:
            raise RunnerError("An empty text has no embedding.")
        if len(tokens) > self.max_tokens:
            raise RunnerError(f"A text of {len(tokens)} tokens is longer than the {self.max_tokens} "
                              "an embedding takes here.")
        llama_cpp.llama_memory_clear(self._memory, True)
        batch = self._batch
        batch.n_tokens = put_tokens(batch, 0, list(tokens), 0, 0)
        for row in range(batch.n_tokens):
            batch.logits[row] = 1  # pooling reads every token's output
        if llama_cpp.llama_decode(self._context, batch) != 0:
            raise RunnerError(f"llama.cpp failed to embed a text of {len(tokens)} tokens.")
        pooled = llama_cpp.llama_get_embeddings_seq(self._context, 0)
        if not pooled:
            raise RunnerError("llama.cpp gave no pooled embedding for this model.")
        return unit_length(np.ctypeslib.as_array(pooled, shape=(self._size,)))

    def close(self) -> None:
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
        if self._context:
            llama_cpp.llama_free(self._context)
        self._batch = self._context = None


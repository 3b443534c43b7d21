"""A GGUF model under check: logits at every scored position, and answers through the chat runner.

Loading is the chat runner's own (engine/runners/llamacpp/load.py: the file
checks, the weights' buffer types with the AMX workaround, the context
parameters), with one sequence of `context_length` positions. The context is
shared: text chunks are decoded on it with logits requested for the scored
positions (llama.cpp returns them in batch order), and the questions are
answered by a LlamaCppRunner built on the same model and context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, cast

import llama_cpp
import numpy as np

from engine.protocol import ModelConfig
from engine.quantcheck.errors import Cancelled
from engine.quantcheck.vocabulary import Vocabulary
from engine.runners.base import RunnerError
from engine.runners.llamacpp.batch import put_tokens
from engine.runners.llamacpp.info import build_info, placement
from engine.runners.llamacpp.load import check_config, check_file, create_context, llama_log, load_failure, load_model
from engine.runners.llamacpp.runner import LlamaCppRunner

Progress = Callable[[float, str], None]


def read_vocabulary(path: str) -> Vocabulary:
    """The GGUF's tokenizer from a vocabulary-only load: no weights are read."""
    file = check_file(path)
    log = llama_log()
    mark = log.mark()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(file).encode("utf-8"), params)
    if not model:
        raise RunnerError(load_failure(file, log.errors_since(mark)))
    try:
        return vocabulary_of(model)
    finally:
        llama_cpp.llama_model_free(model)


def vocabulary_of(model: int) -> Vocabulary:
    vocab = llama_cpp.llama_model_get_vocab(model)
    count = llama_cpp.llama_vocab_n_tokens(vocab)
    tokens = tuple(
        (llama_cpp.llama_vocab_get_text(vocab, i) or b"") + b"\x00" + bytes([llama_cpp.llama_vocab_get_attr(vocab, i) & 0xFF])
        for i in range(count)
    )
    special = (
        ("type", int(llama_cpp.llama_vocab_type(vocab))),
        ("bos", int(llama_cpp.llama_vocab_bos(vocab))),
        ("eos", int(llama_cpp.llama_vocab_eos(vocab))),
        ("adds bos", int(bool(llama_cpp.llama_vocab_get_add_bos(vocab)))),
    )
    return Vocabulary(tokens, special)


class LlamaCppScorer:
    backend = "llamacpp"

    def __init__(
        self, runner: LlamaCppRunner, model: int, context: int, path: Path, context_length: int,
        cancelled: Callable[[], bool],
    ) -> None:
        self.runner = runner  # owns model and context: closing it frees both
        self._model = model
        self._context = context
        self._cancelled = cancelled
        # A 512-token chunk takes seconds on a CPU: while one is decoded, Cancel stops it between two
        # graph nodes. Answers decode one token at a time and check Cancel between tokens; a Python
        # call per graph node (~750 a token here) would slow them by a few percent.
        self._abort = llama_cpp.ggml_abort_callback(self._on_abort_poll)
        self._no_abort = llama_cpp.ggml_abort_callback(0)
        self._vocab = llama_cpp.llama_model_get_vocab(model)
        self.vocabulary_size = int(llama_cpp.llama_vocab_n_tokens(self._vocab))
        self.context_length = context_length
        self.quantization = runner.info.quantization
        self.size_bytes = path.stat().st_size
        self.footprint_bytes = runner.info.model_bytes
        self._batch: llama_cpp.llama_batch | None = llama_cpp.llama_batch_init(context_length, 0, 1)

    @classmethod
    def open(
        cls, path: str, context_length: int, threads: int | None, progress: Progress, cancelled: Callable[[], bool]
    ) -> LlamaCppScorer:
        config = ModelConfig(
            path=path, backend="llamacpp", context_length=context_length, slots=1,
            batch_tokens=context_length, threads=threads,
        )
        file = check_file(path)
        check_config(config)
        mark = llama_log().mark()
        model = load_model(file, config, progress, cancelled)
        try:
            trained = int(llama_cpp.llama_model_n_ctx_train(model))
            length = min(context_length, trained) if trained > 0 else context_length
            context = create_context(model, file, config, length, placement(config, llama_log().since(mark))[1])
        except BaseException:
            llama_cpp.llama_model_free(model)
            raise
        try:
            info = build_info(model, file, config, length, int(llama_cpp.llama_n_ctx(context)), llama_log().since(mark))
            runner = LlamaCppRunner(model, context, info, config)
        except BaseException:
            llama_cpp.llama_free(context)
            llama_cpp.llama_model_free(model)
            raise
        return cls(runner, model, context, file, length, cancelled)

    def _on_abort_poll(self, _data: object) -> bool:
        try:
            return bool(self._cancelled())
        except Exception:  # noqa: BLE001 - an exception must never cross into C
            return False

    def vocabulary(self) -> Vocabulary:
        return vocabulary_of(self._model)

    def text_tokens(self, text: str) -> list[int]:
        """As llama-perplexity tokenizes its text: special tokens added, none parsed from the text."""
        data = text.encode("utf-8")
        size = len(data) + 8
        for _ in range(2):
            tokens = (llama_cpp.llama_token * size)()
            count = llama_cpp.llama_tokenize(self._vocab, data, len(data), tokens, size, True, False)
            if count >= 0:
                return list(tokens[:count])
            size = -count
        raise RunnerError(f"The reference text could not be tokenized ({len(data):,} bytes).")

    def chunk_bos(self) -> int | None:
        """The token each chunk starts with, when the model adds one (as llama-perplexity does)."""
        if llama_cpp.llama_vocab_get_add_bos(self._vocab):
            return int(llama_cpp.llama_vocab_bos(self._vocab))
        return None

    def chunk_logits(self, chunk: list[int], first: int, last: int) -> np.ndarray:
        """float32 logits (last - first, vocabulary) of positions first..last-1, from a fresh cache."""
        if self._batch is None or len(chunk) > self.context_length:
            raise RunnerError(f"A chunk of {len(chunk)} tokens does not fit a context of {self.context_length}.")
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self._context), True)
        batch = self._batch
        batch.n_tokens = put_tokens(batch, 0, chunk, 0, 0)
        wants_logits = cast(Any, batch.logits)
        for index in range(first, last):
            wants_logits[index] = 1
        llama_cpp.llama_set_abort_callback(self._context, self._abort, None)
        try:
            result = llama_cpp.llama_decode(self._context, batch)
        finally:
            llama_cpp.llama_set_abort_callback(self._context, self._no_abort, None)
        if result == 2 and self._cancelled():
            raise Cancelled()
        if result != 0:
            raise RunnerError(f"llama.cpp failed to decode a chunk of {len(chunk)} tokens (error {result}).")
        pointer = llama_cpp.llama_get_logits(self._context)
        logits = np.ctypeslib.as_array(pointer, shape=(last - first, self.vocabulary_size)).copy()
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(self._context), True)
        return logits

    def close(self) -> None:
        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        self.runner.close()

"""Counting a document's tokens with the model's own tokenizer, without loading its weights.

A GGUF is opened vocabulary-only (llama.cpp reads no tensors; a few ms for the default model), so the
window's document worker can count while the engine thread keeps the loaded model to itself. A
transformers folder gets its AutoTokenizer. Document text is counted as text: a "<|im_end|>" written
inside a file is not the special token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class GgufTokenCounter:
    """`counter(text)` is the number of tokens `text` is in the GGUF's vocabulary."""

    def __init__(self, path: str | Path) -> None:
        import llama_cpp

        from engine.runners.base import RunnerError
        from engine.runners.llamacpp.load import check_file, llama_log, load_failure

        self._llama: Any = llama_cpp
        file = check_file(str(path))
        log = llama_log()
        mark = log.mark()
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        self._model = llama_cpp.llama_model_load_from_file(str(file).encode("utf-8"), params)
        if not self._model:
            raise RunnerError(load_failure(file, log.errors_since(mark)))
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)

    def __call__(self, text: str) -> int:
        data = text.encode("utf-8")
        if not data:
            return 0
        # With no room for tokens llama_tokenize returns minus the count it needs: counting costs no buffer.
        count = self._llama.llama_tokenize(self._vocab, data, len(data), None, 0, False, False)
        return -count if count < 0 else count

    def close(self) -> None:
        if self._model:
            self._llama.llama_model_free(self._model)
            self._model = None


class HfTokenCounter:
    def __init__(self, folder: str | Path) -> None:
        from transformers import AutoTokenizer

        self._tokenizer = AutoTokenizer.from_pretrained(str(folder))

    def __call__(self, text: str) -> int:
        return len(self._tokenizer(text, add_special_tokens=False)["input_ids"])

    def close(self) -> None:
        pass


def token_counter(model_path: str | Path) -> GgufTokenCounter | HfTokenCounter:
    """The counter for a model file (.gguf) or a transformers folder."""
    return GgufTokenCounter(model_path) if str(model_path).lower().endswith(".gguf") else HfTokenCounter(model_path)

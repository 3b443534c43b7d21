"""A transformers model under check, loaded by the chat runner (bitsandbytes int8 / NF4 / FP4 included).

HfRunner.load does the file checks, the device/dtype choices and the
bitsandbytes probe; the check calls the loaded model directly for a chunk's
logits (no cache: every chunk starts fresh) and answers the questions through
the runner, as a chat would.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine.protocol import ModelConfig
from engine.quantcheck.vocabulary import Vocabulary
from engine.runners.base import RunnerError
from engine.runners.hf.gguf_tokens import repair_gguf_tokens
from engine.runners.hf.load import check_folder, resolve_source

Progress = Callable[[float, str], None]


def read_vocabulary(path: str) -> Vocabulary:
    """The tokenizer of a model folder (or a GGUF read by transformers), without its weights."""
    from transformers import AutoTokenizer

    source = resolve_source(ModelConfig(path=path, backend="hf"))
    if source.gguf_file is None:
        check_folder(source.folder)
    kwargs: dict[str, Any] = {"local_files_only": True, "trust_remote_code": False}
    if source.gguf_file:
        kwargs["gguf_file"] = source.gguf_file
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source.folder), **kwargs)
    except Exception as error:  # transformers raises many kinds; one sentence is enough here
        raise RunnerError(f"{source.folder}: the tokenizer could not be loaded ({error}).") from error
    if source.gguf_file:  # as the runner reads it: the special tokens transformers garbles put back
        tokenizer = repair_gguf_tokens(tokenizer, source.folder / source.gguf_file)
    return vocabulary_of(tokenizer)


def vocabulary_of(tokenizer: Any) -> Vocabulary:
    pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    special = tuple(
        (name, int(getattr(tokenizer, f"{name}_token_id")))
        for name in ("bos", "eos", "pad", "unk")
        if getattr(tokenizer, f"{name}_token_id", None) is not None
    )
    return Vocabulary(tuple(str(piece).encode("utf-8") for piece in pieces), special)


def folder_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(file.stat().st_size for file in path.glob("*.safetensors"))


class HfScorer:
    backend = "hf"

    def __init__(self, runner: Any, path: Path) -> None:
        from engine.runners.hf.text import tokenizer_adds_bos

        self.runner = runner
        self._model = runner.model
        self._tokenizer = runner.tokenizer
        self._adds_bos = tokenizer_adds_bos(self._tokenizer)
        self.vocabulary_size = int(self._model.get_output_embeddings().weight.shape[0])
        self.context_length = int(runner.context_length)
        self.quantization = runner.info.quantization
        self.footprint_bytes = int(runner.info.model_bytes)
        # The files are the same for every bitsandbytes mode; what the mode changes is memory.
        self.size_bytes = self.footprint_bytes if runner.info.quantization not in ("fp32", "bf16", "fp16") else folder_bytes(path)

    @classmethod
    def open(
        cls, path: str, quantization: str, context_length: int, threads: int | None,
        progress: Progress, cancelled: Callable[[], bool],
    ) -> HfScorer:
        from engine.runners.hf.runner import HfRunner

        if quantization not in ("none", "int8", "nf4", "fp4"):
            raise RunnerError(f"quantization {quantization!r}: the transformers backend knows none, int8, nf4 and fp4.")
        config = ModelConfig(
            path=path, backend="hf", context_length=context_length, slots=1, batch_tokens=context_length,
            threads=threads, quantization=quantization,  # type: ignore[arg-type]
        )
        return cls(HfRunner.load(config, progress, cancelled), Path(path).expanduser())

    def vocabulary(self) -> Vocabulary:
        return vocabulary_of(self._tokenizer)

    def text_tokens(self, text: str) -> list[int]:
        return list(self._tokenizer.encode(text, add_special_tokens=True, verbose=False))  # longer than a context: chunked

    def chunk_bos(self) -> int | None:
        return int(self._tokenizer.bos_token_id) if self._adds_bos else None

    def chunk_logits(self, chunk: list[int], first: int, last: int) -> np.ndarray:
        import torch

        ids = torch.tensor([chunk], dtype=torch.long, device=self.runner.device)
        with torch.inference_mode():
            logits = self._model(input_ids=ids, use_cache=False).logits[0, first:last]
        return logits.float().cpu().numpy()

    def close(self) -> None:
        self._model = None
        self.runner.close()

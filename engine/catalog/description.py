"""What a model is, read from its files: the description the dialog shows and the estimate sizes.

Plain data shared by the readers (engine/catalog/gguf.py, engine/catalog/hf_folder.py)
and by describe/discover (engine/catalog/models.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine.units import format_bytes, format_count

ModelKind = Literal["gguf", "hf"]


class ModelReadError(Exception):
    """A model file or folder that cannot be described, in words a person can act on."""


@dataclass(frozen=True)
class ModelDescription:
    """What a model is and how big its parts are; everything the estimate needs."""

    path: str  # the GGUF file, or the Hugging Face folder
    kind: ModelKind
    name: str
    architecture: str
    n_params: int
    file_bytes: int  # on disk (all files of a folder)
    quantization: str  # GGUF file type ("Q4_1", "Q4_K_M", "F16") or HF dtype ("bf16")
    trained_context_length: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    embedding_length: int
    vocab_size: int
    tensor_bytes: int  # sum of all tensor sizes as stored
    layer_bytes: tuple[int, ...] = ()  # GGUF: bytes of blk.N.* for each layer
    output_bytes: int = 0  # GGUF: the output head llama.cpp offloads with the last layer
    unquantized_params: int = 0  # HF: embeddings, norms, biases, lm_head (bitsandbytes keeps them)
    dtype: str = ""  # HF: the dtype in config.json ("bfloat16")
    tied_embeddings: bool = False
    repacked_bytes: int = 0  # GGUF: layer matrices llama.cpp holds a second, repacked copy of on the CPU

    @property
    def default_backend(self) -> Literal["llamacpp", "hf"]:
        return "llamacpp" if self.kind == "gguf" else "hf"

    def summary(self) -> str:
        """One line for a list entry."""
        return (f"{self.architecture} · {format_count(self.n_params)} parameters · "
                f"{self.quantization} · {format_bytes(self.file_bytes)} · "
                f"trained context {self.trained_context_length:,}")


@dataclass(frozen=True)
class ModelEntry:
    """One model the dialog can offer: where it was found and what it is."""

    path: str
    source: str  # "Bundled default", "Recently used", "Models folder", "Downloaded" (the HF cache)
    description: ModelDescription | None
    error: str = ""  # why it could not be described

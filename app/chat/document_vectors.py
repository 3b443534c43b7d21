"""Which embedding a chat's documents are searched with besides their words (Settings: Documents).

off (the default): BM25 alone, no model needed. "gguf": a GGUF embedding model chosen in Settings,
loaded in the document worker's thread (engine/documents/embedder.py), once per file for all tabs.
"chat_model": the chat's loaded model makes the vectors through the engine (an Embed command between
two steps, as /v1/embeddings does). A model's vectors are named after it ("gguf:PATH", "model:PATH"):
an index holds one model's at a time (engine/documents/index.py), so a question asked with another
model's vectors than the index's is searched by words until the next file brings the index up to date.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.documents.retrieval import Embed as EmbedTexts
from engine.protocol import ModelInfo

_embedders: dict[str, object] = {}
_embedders_lock = threading.Lock()


@dataclass(frozen=True)
class Vectors:
    """How to embed texts, and the name of the vectors it makes."""

    embed: EmbedTexts
    name: str


def document_vectors(mode: str, gguf_path: str, model: ModelInfo | None,
                     engine_embedder: Callable[[str], EmbedTexts]) -> Vectors | None:
    """The vectors the settings ask for, or None: off, no model chosen, or a model that cannot embed here."""
    if mode == "gguf" and gguf_path:
        return Vectors(lambda texts: _gguf(gguf_path)(texts), f"gguf:{gguf_path}")
    if mode == "chat_model" and model is not None and model.backend != "remote":
        return Vectors(engine_embedder(model.path), f"model:{model.path}")
    return None


def _gguf(path: str) -> Callable[[Sequence[str]], np.ndarray]:
    """The GGUF embedder of `path`, loaded on first use (in the worker thread that asks first) and kept."""
    from engine.documents.embedder import GgufEmbedder

    with _embedders_lock:
        found = _embedders.get(path)
        if found is None:
            found = _embedders[path] = GgufEmbedder(path)
    return found  # type: ignore[return-value]

"""Which embedding a chat's documents are searched with besides their words (Settings: Documents).

off (the default): BM25 alone, no model needed. "gguf": a GGUF embedding model chosen in Settings,
loaded in the document worker's thread (engine/documents/embedder.py), once per file for all tabs; the
GUI thread only uses it once `ready` says it is in (a question waits for the worker's load: `prepare`).
"chat_model": the chat's loaded model makes the vectors through the engine (an Embed command between
two steps, as /v1/embeddings does). A model's vectors are named after it ("gguf:PATH", "model:PATH"):
an index holds one model's at a time (engine/documents/index.py), so a question asked with another
model's vectors than the index's is searched by words until the next file brings the index up to date.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.documents.retrieval import Embed as EmbedTexts
from engine.protocol import ModelInfo


def _nothing_to_load() -> None:
    return None


def _always() -> bool:
    return True


@dataclass(frozen=True)
class Vectors:
    """How to embed texts, and the name of the vectors it makes; `prepare` loads what `embed` needs (a worker
    thread calls it: it may take seconds) and `ready` says, without waiting, whether that is done."""

    embed: EmbedTexts
    name: str
    prepare: Callable[[], None] = _nothing_to_load
    ready: Callable[[], bool] = _always


def document_vectors(mode: str, gguf_path: str, model: ModelInfo | None,
                     engine_embedder: Callable[[str], EmbedTexts]) -> Vectors | None:
    """The vectors the settings ask for, or None: off, no model chosen, or a model that cannot embed here."""
    if mode == "gguf" and gguf_path:
        return _gguf_vectors(gguf_path)
    if mode == "chat_model" and model is not None and model.backend != "remote":
        return Vectors(engine_embedder(model.path), f"model:{model.path}")
    return None


def _gguf_vectors(path: str) -> Vectors:
    from engine.documents.embedder import loaded_embedder, shared_embedder

    def prepare() -> None:
        shared_embedder(path)

    return Vectors(lambda texts: shared_embedder(path)(texts), f"gguf:{path}", prepare,
                   lambda: loaded_embedder(path) is not None)

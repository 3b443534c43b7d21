"""Random-weight draft models of the default model's vocabulary (engine/randweights): one F32 layer of width 64,
so that loading one costs next to nothing; as a draft it is never right. With `extra_tokens` its vocabulary is
longer than the model's, which a draft model may not be."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.randweights import gguf_model


def write_tiny_draft(source: str, reader: Any, target: Path, extra_tokens: int = 0) -> Path:
    """`reader`: `source` opened by gguf.GGUFReader (seconds for its vocabulary: read it once)."""
    from engine.bench.shapes import padded_vocabulary

    base = gguf_model.shape_of(reader)
    # An output matrix of its own: tied to the embeddings, one random layer mostly echoes the last token, which
    # a model writing "..." or a blank line would accept now and then.
    shape = gguf_model.scaled(base, layers=1, embedding=64, feed_forward=128, heads=2, kv_heads=1,
                              vocab=base.vocab + extra_tokens, tied=False)
    fields = padded_vocabulary(reader, shape.vocab, base.vocab)
    return gguf_model.write_random(source, target, shape, seed=3, reader=reader, types={}, fields=fields)

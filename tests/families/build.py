"""A family's fixture model: a tiny random-weight llama-architecture GGUF with the family's vocabulary
and chat template, made once per machine and kept beside the sources.

Two layers of width 64 (the embedding rows in Q8_0, the rest F32): a few MB to ~20 MB by vocabulary,
loaded in well under a second. Its words are noise; what it writes under a grammar is forced, and
every marker, prompt and parse is the real family's.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from engine.randweights.gguf_model import LlamaShape, llama_tensors, random_tensor
from tests.families.recipes import FAMILIES, Family
from tests.families.sources import fixture_file, folder
from tests.families.vocab import Vocabulary

BUILD_VERSION = 1  # bump when what is written changes: the kept files are then made again
CONTEXT = 4096


def shape_for(vocabulary: Vocabulary) -> LlamaShape:
    return LlamaShape(layers=2, embedding=64, feed_forward=128, heads=4, kv_heads=2, vocab=len(vocabulary.tokens),
                      tied=True, name="")


def family_model(name: str) -> Path:
    """The fixture GGUF of family `name` (made here the first time)."""
    family = FAMILIES[name]
    template = fixture_file(family.template).read_text()
    key = hashlib.sha256(f"{BUILD_VERSION}\0{family.vocabulary.__name__}\0{template}".encode()).hexdigest()[:12]
    target = folder() / "built" / f"{name}-{key}.gguf"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(f".{os.getpid()}.partial")
        write_model(partial, family, family.vocabulary(), template)
        partial.replace(target)
    return target


def write_model(target: Path, family: Family, vocabulary: Vocabulary, template: str, seed: int = 0,
                fields: dict[str, Any] | None = None) -> Path:
    """`fields`: more metadata (int, float, bool or str values), e.g. a pooling type."""
    import gguf

    shape = shape_for(vocabulary)
    writer = gguf.GGUFWriter(target, arch="llama")
    writer.add_name(f"{family.title} fixture")
    writer.add_context_length(CONTEXT)
    writer.add_embedding_length(shape.embedding)
    writer.add_block_count(shape.layers)
    writer.add_feed_forward_length(shape.feed_forward)
    writer.add_head_count(shape.heads)
    writer.add_head_count_kv(shape.kv_heads)
    writer.add_rope_dimension_count(shape.head_dim)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(shape.vocab)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    _add_vocabulary(writer, vocabulary)
    writer.add_chat_template(template)
    _add_scalars(writer, fields or {})
    specs = llama_tensors(shape, {"token_embd.weight": "Q8_0"})
    rng = np.random.default_rng(seed)
    tensors = [random_tensor(spec, rng) for spec in specs]
    for spec, data in zip(specs, tensors):
        raw = None if spec.type == "F32" else gguf.GGMLQuantizationType[spec.type]
        writer.add_tensor(spec.name, data, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


def _add_vocabulary(writer: Any, vocabulary: Vocabulary) -> None:
    writer.add_tokenizer_model(vocabulary.model)
    writer.add_tokenizer_pre(vocabulary.pre)
    writer.add_token_list(list(vocabulary.tokens))
    writer.add_token_types(list(vocabulary.types))
    if vocabulary.merges:
        writer.add_token_merges(list(vocabulary.merges))
    if vocabulary.scores:
        writer.add_token_scores(list(vocabulary.scores))
    _add_scalars(writer, {key: value for key, value in vocabulary.scalars.items() if key != "tokenizer.chat_template"})


def _add_scalars(writer: Any, fields: dict[str, Any]) -> None:
    for key, value in fields.items():
        if isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        elif isinstance(value, float):
            writer.add_float32(key, value)
        elif isinstance(value, str):
            writer.add_string(key, value)

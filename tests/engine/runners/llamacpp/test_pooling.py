"""Embeddings pooled as the GGUF says (`{arch}.pooling_type`), checked against the model's own per-token
outputs: the last token's for LAST, the first's for CLS, their mean where the file names none."""

from __future__ import annotations

from pathlib import Path

import llama_cpp
import numpy as np
import pytest

from engine.runners.llamacpp.batch import put_tokens
from engine.protocol import ModelConfig
from engine.runners.llamacpp.embeddings import LlamaEmbedder
from engine.runners.llamacpp.load import load_model
from engine.runners.llamacpp.vocabulary import tokenize
from tests.families.build import write_model
from tests.families.recipes import FAMILIES
from tests.families.sources import fixture_file

pytestmark = pytest.mark.slow
TEXT = "Embeddings are pooled as the model was trained"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same random weights three times: no pooling named, LAST (3), CLS (2)."""
    family = FAMILIES["qwen3"]
    vocabulary, template = family.vocabulary(), fixture_file(family.template).read_text()
    folder = tmp_path_factory.mktemp("pooling")
    made = {}
    for name, fields in (("none", {}), ("last", {"llama.pooling_type": 3}), ("cls", {"llama.pooling_type": 2})):
        made[name] = write_model(folder / f"{name}.gguf", family, vocabulary, template, fields=fields)
    return made


def load(path: Path) -> int:
    return load_model(path, ModelConfig(str(path)), lambda fraction, what: None, lambda: False)


def per_token(model: int, tokens: list[int]) -> np.ndarray:
    """Each token's output embedding (no pooling): what the pooled vectors are made from."""
    params = llama_cpp.llama_context_default_params()
    params.n_ctx = params.n_batch = params.n_ubatch = 64
    params.embeddings, params.pooling_type = True, llama_cpp.LLAMA_POOLING_TYPE_NONE
    context = llama_cpp.llama_init_from_model(model, params)
    batch = llama_cpp.llama_batch_init(64, 0, 1)
    try:
        batch.n_tokens = put_tokens(batch, 0, tokens, 0, 0)
        for row in range(batch.n_tokens):
            batch.logits[row] = 1
        assert llama_cpp.llama_decode(context, batch) == 0
        width = llama_cpp.llama_model_n_embd(model)
        return np.array([np.ctypeslib.as_array(llama_cpp.llama_get_embeddings_ith(context, i), shape=(width,))
                         for i in range(len(tokens))])
    finally:
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(context)


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


@pytest.mark.parametrize(("name", "pick"), [("none", lambda rows: rows.mean(axis=0)),
                                            ("last", lambda rows: rows[-1]), ("cls", lambda rows: rows[0])])
def test_each_file_is_pooled_as_it_names(files: dict[str, Path], name: str, pick) -> None:  # type: ignore[no-untyped-def]
    model = load(files[name])
    try:
        tokens = tokenize(llama_cpp.llama_model_get_vocab(model), TEXT)
        embedder = LlamaEmbedder(model, 64, 1)
        try:
            vector = np.array(embedder.embed(tokens))
        finally:
            embedder.close()
        rows = per_token(model, tokens)
    finally:
        llama_cpp.llama_model_free(model)
    assert abs(np.linalg.norm(vector) - 1) < 1e-4
    np.testing.assert_allclose(vector, unit(pick(rows)), atol=1e-4)
    others = [unit(rows.mean(axis=0)), unit(rows[-1]), unit(rows[0])]
    assert sum(np.allclose(vector, other, atol=1e-4) for other in others) == 1  # the three differ

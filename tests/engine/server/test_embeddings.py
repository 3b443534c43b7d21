"""POST /v1/embeddings on the real default model, through the real openai client; and the transformers runner's.

Asserted: shape, unit length, the same text giving the same vector (within a
tolerance: llama.cpp's sums may be ordered differently between batches), base64
decoding to the same floats, usage counting the texts' tokens, and a clear 400.
"""

from __future__ import annotations

import base64

import numpy as np
import pytest

from engine.server import ApiServer
from tests.engine.server.test_bad_requests import assert_openai_error, call

pytestmark = pytest.mark.slow
TEXTS = ["The sea is calm tonight.", "A recipe for bread needs flour, water, salt and yeast."]


def test_vectors_have_the_model_size_unit_length_and_are_the_same_for_the_same_text(client) -> None:  # type: ignore[no-untyped-def]
    answer = client.embeddings.create(model="SmolLM2-135M-Instruct.Q4_1", input=[TEXTS[0], TEXTS[1], TEXTS[0]],
                                      encoding_format="float")
    vectors = np.array([item.embedding for item in answer.data])
    assert [item.index for item in answer.data] == [0, 1, 2]
    assert vectors.shape == (3, 576)  # SmolLM2-135M's hidden size
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[0], vectors[2], atol=1e-4)
    assert not np.allclose(vectors[0], vectors[1], atol=1e-2)
    single = client.embeddings.create(model="SmolLM2-135M-Instruct.Q4_1", input=TEXTS[0], encoding_format="float")
    assert np.allclose(single.data[0].embedding, vectors[0], atol=1e-4)
    assert single.usage.prompt_tokens == single.usage.total_tokens > 5
    other = client.embeddings.create(model="SmolLM2-135M-Instruct.Q4_1", input=TEXTS[1]).usage.prompt_tokens
    assert answer.usage.prompt_tokens == 2 * single.usage.prompt_tokens + other


def test_base64_decodes_to_the_floats(server: ApiServer) -> None:
    status, _, as_floats = call(server.port, "POST", "/v1/embeddings", {"input": TEXTS[1]})
    assert status == 200 and as_floats["object"] == "list"
    status, _, as_base64 = call(server.port, "POST", "/v1/embeddings", {"input": TEXTS[1], "encoding_format": "base64"})
    assert status == 200
    decoded = np.frombuffer(base64.b64decode(as_base64["data"][0]["embedding"]), dtype="<f4")
    assert decoded.shape == (576,)
    assert np.allclose(decoded, as_floats["data"][0]["embedding"], atol=1e-4)


@pytest.mark.parametrize("body, param", [({"input": ""}, "input"), ({"input": ["a", ""]}, "input[1]"),
                                         ({"input": "a", "dimensions": 64}, "dimensions"),
                                         ({"input": [1, 2, 3]}, "input"),
                                         ({"input": "word " * 1500}, "input")])
def test_bad_embedding_requests_are_400s_naming_the_field(server: ApiServer, body: dict, param: str) -> None:
    status, _, answer = call(server.port, "POST", "/v1/embeddings", body)
    assert status == 400, answer
    assert_openai_error(answer, "invalid_request_error", param)
    assert call(server.port, "POST", "/v1/embeddings", {"input": "still here"})[0] == 200


def test_the_transformers_runner_embeds_too(tiny_model: str) -> None:
    from engine.protocol import ModelConfig
    from engine.runners.hf.runner import HfRunner

    runner = HfRunner.load(ModelConfig(path=tiny_model, backend="hf", slots=1, context_length=64),
                           lambda *_: None, lambda: False)
    try:
        vectors, counts = runner.embed(["hello there", "a different text", "hello there"])
        array = np.array(vectors)
        assert array.shape == (3, runner.model.config.hidden_size) and counts[0] == counts[2] > 1
        assert np.allclose(np.linalg.norm(array, axis=1), 1.0, atol=1e-5)
        assert np.allclose(array[0], array[2], atol=1e-5) and not np.allclose(array[0], array[1], atol=1e-3)
    finally:
        runner.close()

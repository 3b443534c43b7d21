"""POST /v1/embeddings: OpenAI's request and answer, the vectors from the engine's Embed / Embedded.

`input` is a string or a list of strings (token-id inputs are refused: the
vectors come from text); `encoding_format` "float" gives lists of numbers,
"base64" the little-endian float32 bytes, as OpenAI's client decodes them.
"""

from __future__ import annotations

import base64
from typing import Any, Literal, Union

import numpy as np
from pydantic import Field

from engine.protocol import Embedded
from engine.server import tooling
from engine.server.schema import _Strict

MAX_INPUTS = 256


class EmbeddingsRequest(_Strict):
    model: str | None = None
    input: Union[str, list[str]]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None


def texts_of(request: EmbeddingsRequest) -> tuple[str, ...]:
    texts = (request.input,) if isinstance(request.input, str) else tuple(request.input)
    if not texts:
        raise tooling.bad("input", "give at least one text.")
    if len(texts) > MAX_INPUTS:
        raise tooling.bad("input", f"at most {MAX_INPUTS} texts per request.")
    for index, text in enumerate(texts):
        if not text:
            raise tooling.bad("input" if isinstance(request.input, str) else f"input[{index}]",
                              "an empty text has no embedding.")
    if request.dimensions is not None:
        raise tooling.bad("dimensions", "this server gives the model's own vectors and cannot shorten them.")
    return texts


def embeddings_body(answer: Embedded, model: str, encoding: str) -> dict[str, Any]:
    data = [{"object": "embedding", "index": index, "embedding": _encoded(vector, encoding)}
            for index, vector in enumerate(answer.vectors)]
    tokens = sum(answer.token_counts)
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def _encoded(vector: tuple[float, ...], encoding: str) -> list[float] | str:
    if encoding == "float":
        return list(vector)
    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii")

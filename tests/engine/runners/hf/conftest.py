"""The tiny Hugging Face model, built once per session for every transformers test here."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    pytest.importorskip("transformers")
    from tests.engine.runners.hf.tiny_hf import build_tiny_llama

    return str(build_tiny_llama(tmp_path_factory.mktemp("tiny_llama")))

"""Engine test fixtures: the tiny Hugging Face model, and the default model as a base model would come."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.engine.templateless_gguf import write_without_chat_template

ENDOFTEXT = 0  # SmolLM2's "<|endoftext|>": the end token of its base model, where "<|im_end|>" is not


@pytest.fixture(scope="session")
def templateless_model(default_model: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The default GGUF without tokenizer.chat_template and with the base model's end token."""
    target = tmp_path_factory.mktemp("base") / "SmolLM2-135M-no-template.gguf"
    return str(write_without_chat_template(Path(default_model), target, eos_token_id=ENDOFTEXT))


@pytest.fixture(scope="session")
def default_gguf_fields(default_model: str) -> Any:
    """The default GGUF read by gguf.GGUFReader, once (seconds: its vocabulary), for files made from its fields."""
    import gguf

    return gguf.GGUFReader(default_model)


@pytest.fixture(scope="session")
def random_draft_model(default_model: str, default_gguf_fields: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A draft model of the default model's vocabulary that is never right (tests/engine/random_drafts.py)."""
    from tests.engine.random_drafts import write_tiny_draft

    target = tmp_path_factory.mktemp("random_draft") / "random-draft.gguf"
    return str(write_tiny_draft(default_model, default_gguf_fields, target))


@pytest.fixture(scope="session")
def vision_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny LLaVA folder built in code (tests/engine/runners/hf/tiny_vision.py), once per session."""
    pytest.importorskip("transformers")
    from tests.engine.runners.hf.tiny_vision import build_tiny_llava

    return str(build_tiny_llava(tmp_path_factory.mktemp("tiny_llava") / "tiny-llava"))


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny Llama folder built in code (tests/engine/runners/hf/tiny_hf.py), once per session."""
    pytest.importorskip("transformers")
    from tests.engine.runners.hf.tiny_hf import build_tiny_llama

    return str(build_tiny_llama(tmp_path_factory.mktemp("tiny_llama") / "tiny-llama"))


@pytest.fixture(scope="session")
def repeating_model(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The tiny Llama trained to answer each of its corpus sentences with the sentence: a model that copies."""
    pytest.importorskip("transformers")
    from tests.engine.runners.hf.tiny_hf import build_repeating_llama

    return str(build_repeating_llama(tmp_path_factory.mktemp("repeating_llama") / "repeating-llama"))


@pytest.fixture(scope="session")
def speech_to_text(speech_model: str):  # type: ignore[no-untyped-def]
    from engine.voice.whisper import FasterWhisper

    return FasterWhisper(speech_model, threads=2)


@pytest.fixture(scope="session")
def text_to_speech(voice_model: str):  # type: ignore[no-untyped-def]
    from engine.voice.piper_voice import PiperSpeech

    return PiperSpeech(voice_model, threads=2)

"""Engine test fixtures: the default model as a base model would come, without a chat template."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.engine.templateless_gguf import write_without_chat_template

ENDOFTEXT = 0  # SmolLM2's "<|endoftext|>": the end token of its base model, where "<|im_end|>" is not


@pytest.fixture(scope="session")
def templateless_model(default_model: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The default GGUF without tokenizer.chat_template and with the base model's end token."""
    target = tmp_path_factory.mktemp("base") / "SmolLM2-135M-no-template.gguf"
    return str(write_without_chat_template(Path(default_model), target, eos_token_id=ENDOFTEXT))

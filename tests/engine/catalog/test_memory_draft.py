"""A draft model in the memory estimate: its own estimate (the model's context and chats, no prompt copy) beside
the model's, on the same device; a file that cannot be read counts nothing (loading says why)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.catalog.gguf import describe_gguf
from engine.catalog.memory import estimate
from engine.protocol import ModelConfig

RAM = 32 << 30


def test_a_draft_model_is_counted_as_its_own_estimate_beside_the_model(default_model: str, tmp_path: Path) -> None:
    model = describe_gguf(Path(default_model))
    config = ModelConfig(path=default_model, context_length=1024, slots=2, device="cpu", gpu_layers=0, prompt_copy="off")
    plain = estimate(model, config, has_gpu=False, total_memory=RAM)
    assert plain.draft_model_bytes == 0
    # the default model as its own draft: twice the model, each with its own cache
    with_draft = estimate(model, dataclasses.replace(config, draft_model=default_model), has_gpu=False, total_memory=RAM)
    assert with_draft.draft_model_bytes == plain.total_bytes
    assert with_draft.total_bytes == 2 * plain.total_bytes
    assert with_draft.after_load_bytes == 2 * plain.after_load_bytes
    # auto would read prompts with an F32 copy here; the draft model never does
    copying = dataclasses.replace(config, prompt_copy="on", draft_model=default_model)
    assert estimate(model, copying, has_gpu=False, total_memory=RAM).draft_model_bytes == plain.total_bytes
    missing = dataclasses.replace(config, draft_model=str(tmp_path / "missing.gguf"))
    assert estimate(model, missing, has_gpu=False, total_memory=RAM).total_bytes == plain.total_bytes

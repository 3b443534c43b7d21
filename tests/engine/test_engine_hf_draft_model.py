"""The real engine loads a transformers model with a draft model beside it (ModelConfig.draft_model, a folder): the
estimate it is loaded under counts it, the model's description and the gauge's figures carry it, turns draft with
it and answer as without it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from engine.catalog.here import estimate_here
from engine.catalog.models import describe
from engine.protocol import ChatMessage, EngineStats, LoadModel, ModelConfig, ModelLoaded, SamplingParams, Submit
from tests.engine.engine_harness import EngineHarness
from tests.engine.runners.hf.tiny_hf import CORPUS, build_tokenizer

pytest.importorskip("transformers")
pytestmark = pytest.mark.hf

GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=24, speculative="auto")
# a sentence it was trained to repeat (prompt lookup guesses it), and two questions it was not (nothing to look up)
TEXTS = [CORPUS[0], "Tell me about cats and dogs.", "What is the capital of France?"]


def build_narrow_llama(folder: Path) -> Path:
    """The tiny models' tokenizer on a quarter-width random Llama: a draft model small enough to be asked."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder.mkdir(parents=True)
    tokenizer = build_tokenizer(folder)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
                         pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False)
    torch.manual_seed(5)
    LlamaForCausalLM(config).to(torch.float32).eval().save_pretrained(folder, safe_serialization=True)
    return folder


def answer(engine: EngineHarness, chat: str, text: str) -> tuple[str, list[tuple[str, int, int]]]:
    mark = engine.mark()
    engine.loop.send(Submit(chat, (ChatMessage("user", text),), GREEDY))
    end = engine.finished(chat, mark)
    return "".join(text for _, text in engine.tokens(chat, mark)), list(end.stats.drafts_by_source)


def test_a_transformers_model_loads_drafts_and_answers_with_a_draft_model(repeating_model: str,
                                                                          tmp_path: Path) -> None:
    draft = str(build_narrow_llama(tmp_path / "narrow-llama"))
    config = ModelConfig(path=repeating_model, backend="hf", context_length=256, slots=2, threads=1, device="cpu")
    with_draft = replace(config, draft_model=draft)
    alone, paired = estimate_here(describe(repeating_model), config), estimate_here(describe(repeating_model), with_draft)
    assert paired.draft_model_bytes > 0 and paired.device_bytes == alone.device_bytes + paired.draft_model_bytes
    engine = EngineHarness()
    try:
        engine.loop.send(LoadModel(config))
        assert isinstance(engine.wait_loaded(), ModelLoaded)
        plain = [answer(engine, f"plain{i}", text)[0] for i, text in enumerate(TEXTS)]
        assert plain[0] == CORPUS[0] and all(plain), "answers worth comparing (the model repeats a sentence it knows)"
        mark = engine.mark()
        engine.loop.send(LoadModel(with_draft))
        loaded = engine.wait_loaded(after=mark)
        assert isinstance(loaded, ModelLoaded), loaded
        assert loaded.info.draft_model == "narrow-llama" and loaded.info.draft_model_bytes > 0
        drafted = [answer(engine, f"drafted{i}", text) for i, text in enumerate(TEXTS)]
        assert [text for text, _ in drafted] == plain
        by_source = [dict((source, made) for source, made, _ in sources) for _, sources in drafted]
        assert sum(sources.get("draft", 0) for sources in by_source) >= 1, by_source
        stats = engine.wait_for(lambda e: isinstance(e, EngineStats) and bool(e.models), after=mark)
        assert isinstance(stats, EngineStats)
        assert [m.draft_model_bytes for m in stats.models] == [loaded.info.draft_model_bytes]
    finally:
        engine.close()

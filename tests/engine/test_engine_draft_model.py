"""The real engine loads a draft model beside the default model (Settings' and hearth-serve's ModelConfig.draft_model):
the model's description and the gauge's figures carry it, turns draft with it, and a draft model of another
vocabulary fails the load with the reason and leaves the engine usable."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from engine.protocol import (ChatMessage, EngineStats, LoadModel, ModelConfig, ModelLoaded, ModelLoadFailed,
                             SamplingParams, Submit)
from tests.engine.engine_harness import EngineHarness
from tests.engine.quantcheck.gguf_copies import swap_two_tokens

GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=24, ignore_eos=True, speculative="auto")


def test_a_loaded_draft_model_drafts_and_is_counted_and_a_wrong_one_is_refused(
        default_model: str, random_draft_model: str, tmp_path: Path) -> None:
    swapped = tmp_path / "swapped.gguf"
    swap_two_tokens(default_model, swapped, 300, 301)
    engine = EngineHarness()
    try:
        config = ModelConfig(path=default_model, context_length=1024, slots=2, prompt_copy="off")
        engine.loop.send(LoadModel(replace(config, draft_model=str(swapped))))
        failed = engine.wait_loaded()
        assert isinstance(failed, ModelLoadFailed)
        assert "Token 300 is 'il' in the draft model swapped.gguf" in failed.message

        mark = engine.mark()
        engine.loop.send(LoadModel(replace(config, draft_model=random_draft_model)))
        loaded = engine.wait_loaded(after=mark)
        assert isinstance(loaded, ModelLoaded), loaded
        assert loaded.info.draft_model == "random-draft.gguf" and loaded.info.draft_model_bytes > 0
        # the random draft is small (a quarter of the model's weights), so it is worth a guess; never right
        engine.loop.send(Submit("poem", (ChatMessage("user", "Write a short poem about the sea."),), GREEDY))
        end = engine.finished("poem", mark)
        sources = {source: (drafted, accepted) for source, drafted, accepted in end.stats.drafts_by_source}
        assert sources["draft"][0] >= 1 and sources["draft"][1] == 0
        stats = engine.wait_for(lambda e: isinstance(e, EngineStats) and bool(e.models), after=mark)
        assert isinstance(stats, EngineStats) and stats.models[0].draft_model_bytes == loaded.info.draft_model_bytes
    finally:
        engine.close()

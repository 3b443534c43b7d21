"""A model file without a chat template gets ChatML, and ChatML's markers end its answers, on both backends.

The model is the default GGUF rewritten without its template and with "<|endoftext|>" as its end
token, as SmolLM2's base model comes (tests/engine/conftest.py). Asked what the capital of France
is, it answers "The capital of France is Paris." and then writes "<|im_end|>": every greedy choice
on the way, the stop included, leads the runner-up by 1.5 logits or more, far beyond what differs
between CPUs.
"""

from __future__ import annotations

import pytest

from engine.protocol import ChatMessage, LoadModel, ModelConfig, ModelInfo, ModelLoaded, SamplingParams, Submit
from tests.engine.engine_harness import EngineHarness

pytestmark = pytest.mark.slow

QUESTION = (ChatMessage("user", "What is the capital of France?"),)
MAX_TOKENS = 48
MARKERS = ("<|im_start|>", "<|im_end|>", "im_start", "im_end")


def answer_through_the_engine(config: ModelConfig) -> tuple[ModelInfo, str, str, int]:
    harness = EngineHarness()
    try:
        harness.loop.send(LoadModel(config))
        loaded = harness.wait_loaded(timeout=300)
        assert isinstance(loaded, ModelLoaded), loaded
        harness.loop.send(Submit("base", QUESTION, SamplingParams(temperature=0, max_new_tokens=MAX_TOKENS)))
        finished = harness.finished("base", timeout=300)
        shown = "".join(text for _, text in harness.tokens("base"))
        assert shown == finished.text, "what reached the screen is the answer"
        return loaded.info, finished.text, finished.reason, finished.stats.generated_tokens
    finally:
        harness.close()


def assert_answered_and_stopped_at_the_marker(text: str, reason: str, generated: int) -> None:
    assert not any(marker in text for marker in MARKERS), text
    assert reason == "stop" and generated < MAX_TOKENS, (reason, generated, text)
    assert "Paris" in text


def test_llamacpp_stops_at_the_fallbacks_markers(templateless_model: str, default_model: str) -> None:
    info, text, reason, generated = answer_through_the_engine(
        ModelConfig(path=templateless_model, slots=1, context_length=1024)
    )
    assert info.has_chat_template is False
    assert_answered_and_stopped_at_the_marker(text, reason, generated)

    from engine.runners.llamacpp.runner import LlamaCppRunner

    for path, markers_end in ((templateless_model, True), (default_model, False)):
        runner = LlamaCppRunner.load(ModelConfig(path=path, slots=1, context_length=256), lambda f, m: None,
                                     lambda: False)
        try:
            [start] = runner.tokenize("<|im_start|>")  # llama.cpp itself ends at <|im_end|>, not at this
            assert runner.is_end_of_generation(start) is markers_end
            assert runner.info.has_chat_template is not markers_end
        finally:
            runner.close()


@pytest.mark.hf
def test_transformers_stops_at_the_fallbacks_markers(templateless_model: str) -> None:
    pytest.importorskip("transformers")
    info, text, reason, generated = answer_through_the_engine(
        ModelConfig(path=templateless_model, backend="hf", slots=1, context_length=512)
    )
    assert info.has_chat_template is False and info.backend == "hf"
    assert_answered_and_stopped_at_the_marker(text, reason, generated)

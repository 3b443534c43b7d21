"""A prompt start computed in one slot serves another (copy_prefix) on the transformers runner.

The same checks as the llama.cpp runner's prefix-copy test, on the tiny Llama in
fp32: after the copy, the next-token distribution equals the one computed from
the whole prompt, within float32 noise; the copy outlives what its source does
next; and the engine's scheduler uses it, so chats sharing a system prompt
compute it once.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.protocol import ChatMessage, ModelConfig, SamplingParams  # noqa: E402
from engine.runners.base import SlotWork  # noqa: E402
from engine.runners.hf.runner import HfRunner  # noqa: E402
from tests.engine.runners.hf.tiny_hf import answer_alone, fresh, prompt  # noqa: E402

pytestmark = pytest.mark.hf

# Chunked and whole prompts sum in other orders: float32 moves log-probabilities by ~1e-6 here.
FP32_NOISE = 1e-4
SYSTEM = "You are a helpful assistant who writes short answers about cats, dogs, bread and the weather."


@pytest.fixture(scope="module")
def runner(tiny_model: str) -> HfRunner:
    config = ModelConfig(path=tiny_model, backend="hf", slots=3, context_length=256, batch_tokens=64)
    loaded = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    yield loaded
    loaded.close()


def _log_probabilities(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - logits.max()
    return shifted - np.log(np.exp(shifted).sum())


def _distribution_shift(expected: np.ndarray, found: np.ndarray) -> float:
    """Largest change in log-probability among the 20 tokens `expected` finds likeliest."""
    top = np.argsort(expected)[-20:]
    return float(np.abs(_log_probabilities(expected)[top] - _log_probabilities(found)[top]).max())


def _next_token_logits(runner: HfRunner, slot: int, tokens: list[int], start: int = 0) -> np.ndarray:
    runner.forward([SlotWork(slot, tokens, start, True)])
    return runner.last_logits(slot)


def test_a_prefix_copied_from_another_slot_serves_without_recomputing_it(runner: HfRunner) -> None:
    tokens = prompt(runner, "What is the capital of France?")
    other = prompt(runner, "Tell me about cats and dogs, bread and the weather.")
    fresh(runner, 0, 1, 2)
    expected = _next_token_logits(runner, 0, tokens)
    shared = len(tokens) - 3

    assert runner.copy_prefix(0, 1, shared)
    assert _distribution_shift(expected, _next_token_logits(runner, 1, tokens[shared:], shared)) <= FP32_NOISE
    # The source moves on to another chat: the copy is the target's own and stays right.
    assert runner.remove_from(0, 0)
    _next_token_logits(runner, 0, other)
    assert len(other) > shared
    assert runner.remove_from(1, shared)
    assert _distribution_shift(expected, _next_token_logits(runner, 1, tokens[shared:], shared)) <= FP32_NOISE
    # A start copied from the wrong chat shows: the check can fail.
    assert runner.copy_prefix(0, 2, shared)
    assert _distribution_shift(expected, _next_token_logits(runner, 2, tokens[shared:], shared)) > 100 * FP32_NOISE


def test_a_copy_longer_than_the_source_holds_is_refused_and_leaves_the_target(runner: HfRunner) -> None:
    tokens = prompt(runner, "Hello!")
    fresh(runner, 0, 1)
    _next_token_logits(runner, 0, tokens)
    mine = prompt(runner, "Once upon a time")
    expected = _next_token_logits(runner, 1, mine)
    assert not runner.copy_prefix(0, 1, len(tokens) + 1)
    assert not runner.copy_prefix(1, 1, 4)
    runner.remove_from(1, len(mine) - 1)
    assert _distribution_shift(expected, _next_token_logits(runner, 1, mine[-1:], len(mine) - 1)) <= FP32_NOISE


def test_chats_sharing_a_system_prompt_compute_it_once_and_answer_as_if_alone(
    tiny_model: str, runner: HfRunner
) -> None:
    from engine.protocol import LoadModel, ModelLoaded, Submit
    from engine.sequence import common_prefix_length
    from engine.slots import MIN_SHARED_PREFIX
    from tests.engine.engine_harness import EngineHarness

    greedy = SamplingParams(temperature=0, max_new_tokens=10)
    chats = {
        "a": (ChatMessage("system", SYSTEM), ChatMessage("user", "Hello!")),
        "b": (ChatMessage("system", SYSTEM), ChatMessage("user", "Once upon a time")),
    }
    prompts = {chat: runner.tokenize(runner.render_chat(messages)) for chat, messages in chats.items()}
    shared = common_prefix_length(prompts["a"], prompts["b"])  # the system prompt and the user turn's opening
    expected = {chat: answer_alone(runner, tokens, greedy) for chat, tokens in prompts.items()}
    harness = EngineHarness()
    try:
        harness.loop.send(LoadModel(ModelConfig(path=tiny_model, backend="hf", slots=2, context_length=256)))
        assert isinstance(harness.wait_loaded(), ModelLoaded)
        mark = harness.mark()
        for chat, messages in chats.items():  # at once: b waits a step for a's start, then copies it
            harness.loop.send(Submit(chat, messages, greedy))
        started = {chat: harness.started(chat, mark) for chat in chats}
        assert started["a"].reused_tokens == 0
        assert started["b"].reused_tokens == shared >= MIN_SHARED_PREFIX
        for chat in chats:
            assert harness.finished(chat, mark).text == expected[chat]
    finally:
        harness.close()

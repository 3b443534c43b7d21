"""The transformers backend's penalties do what llama.cpp's penalties sampler does, on hand-made logits."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from engine.protocol import SamplingParams  # noqa: E402
from engine.runners.hf.sampling import SlotSampler, _apply_penalties  # noqa: E402


def test_repeat_divides_frequency_subtracts_per_use_and_presence_once() -> None:
    logits = torch.tensor([4.0, -2.0, 1.0, 3.0])
    recent = [0, 0, 1, 3, 0]  # token 0 used three times, 1 and 3 once, 2 never
    params = SamplingParams(repeat_penalty=2.0, frequency_penalty=0.5, presence_penalty=0.25)
    out = _apply_penalties(logits, recent, params)
    assert out.tolist() == pytest.approx([4.0 / 2 - 3 * 0.5 - 0.25, -2.0 * 2 - 0.5 - 0.25, 1.0, 3.0 / 2 - 0.5 - 0.25])
    assert logits.tolist() == [4.0, -2.0, 1.0, 3.0]  # the caller's row is left alone


def test_a_frequency_penalty_changes_the_pick_at_top_k_1() -> None:
    logits = torch.tensor([5.0, 4.5, 0.0])
    plain = SlotSampler(SamplingParams(temperature=0.5, top_k=1, repeat_penalty=1.0, seed=1))
    penalized = SlotSampler(SamplingParams(temperature=0.5, top_k=1, repeat_penalty=1.0, frequency_penalty=1.0, seed=1))
    assert plain.sample(logits, recent=[0]) == 0
    assert penalized.sample(logits, recent=[0]) == 1  # 5 - 1 < 4.5


def test_greedy_picks_the_best_penalized_token() -> None:
    """Penalties apply at temperature 0 too, as in the llama.cpp runner and OpenAI's API."""
    logits = torch.tensor([5.0, 4.5, 0.0])
    assert SlotSampler(SamplingParams(temperature=0, repeat_penalty=1.0)).sample(logits, recent=[0]) == 0
    penalized = SlotSampler(SamplingParams(temperature=0, repeat_penalty=1.0, frequency_penalty=1.0))
    assert penalized.sample(logits, recent=[0]) == 1  # 5 - 1 < 4.5

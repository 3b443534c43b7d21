"""The acceptance rule of a draft (engine/runners/verify.py) on known distributions: what a step emits follows
the model's distribution p whatever the draft, as speculative sampling (Leviathan et al.) promises for a draft
that is one fixed token per position.

The "model" here draws from stated distributions with a seeded generator; each check runs TRIALS steps and
allows 5 standard errors (a binomial share's, sqrt(p (1 - p) / TRIALS) <= 0.005 here), so a wrong rule
(keeping the guess always, or drawing the replacement from anything but p without the guess) fails by far more.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.runners.verify import verify_draft

TRIALS = 10_000
TOLERANCE = 5 * 0.5 / np.sqrt(TRIALS)  # 5 standard errors of a share near one half
FIRST = np.array([0.5, 0.3, 0.15, 0.05])  # p at the first position, over a vocabulary of 4
AFTER = {0: np.array([0.1, 0.6, 0.2, 0.1]), 1: np.array([0.25, 0.25, 0.25, 0.25]),  # p at the second, given the first
         2: np.array([0.7, 0.1, 0.1, 0.1]), 3: np.array([0.0, 0.0, 0.5, 0.5])}


def emitted(draft: list[int], trials: int = TRIALS, seed: int = 1) -> tuple[np.ndarray, list[list[int]]]:
    """Each trial's first two tokens of the answer: one verified step with `draft`, then (where the step
    emitted only one) one plain step, as the scheduler's next step would be."""
    rng = np.random.default_rng(seed)

    def draw(p: np.ndarray) -> int:
        return min(int(np.searchsorted(np.cumsum(p), rng.random(), side="right")), len(p) - 1)

    pairs = np.zeros((4, 4))
    steps = []
    for _ in range(trials):
        # row 0 follows the fed token; row i follows draft token i - 1 (asked only where the guesses before held)
        tokens = verify_draft(draft, lambda offset: draw(FIRST if offset == 0 else AFTER[draft[offset - 1]]))
        steps.append(tokens)
        if len(tokens) == 1:
            tokens = tokens + [draw(AFTER[tokens[0]])]
        pairs[tokens[0], tokens[1]] += 1
    return pairs / trials, steps


@pytest.mark.parametrize("guess", [0, 1, 3], ids=["likeliest", "second", "unlikely"])
def test_the_first_token_follows_p_and_the_guess_is_kept_with_its_probability(guess: int) -> None:
    pairs, steps = emitted([guess])
    assert np.abs(pairs.sum(axis=1) - FIRST).max() < TOLERANCE
    kept = sum(1 for tokens in steps if len(tokens) == 2) / TRIALS  # the guess held, and a token came after it
    assert kept == pytest.approx(FIRST[guess], abs=TOLERANCE)
    replaced = [tokens[0] for tokens in steps if len(tokens) == 1]
    assert guess not in replaced, "a rejected guess is never emitted: the draw that rejected it stands"
    shares = np.bincount(replaced, minlength=4) / max(len(replaced), 1)
    residual = np.where(np.arange(4) == guess, 0.0, FIRST) / (1.0 - FIRST[guess])  # p without the guess
    assert np.abs(shares - residual).max() < 2 * TOLERANCE


@pytest.mark.parametrize("draft", [[0, 1], [1, 0], [3, 3], [2, 0]])
def test_two_tokens_follow_the_models_joint_distribution_whatever_the_draft(draft: list[int]) -> None:
    pairs, steps = emitted(draft)
    joint = FIRST[:, None] * np.array([AFTER[first] for first in range(4)])
    assert np.abs(pairs - joint).max() < TOLERANCE
    assert max(len(tokens) for tokens in steps) <= len(draft) + 1


def test_greedy_keeps_a_right_guess_and_replaces_a_wrong_one_with_the_argmax() -> None:
    argmax = [2, 5, 7, 1]  # the model's choice at each row of the step
    assert verify_draft([2, 5, 7], argmax.__getitem__) == [2, 5, 7, 1]
    assert verify_draft([2, 4, 7], argmax.__getitem__) == [2, 5]
    assert verify_draft([], argmax.__getitem__) == [2]
    asked: list[int] = []

    def sample_at(offset: int) -> int:
        asked.append(offset)
        return argmax[offset]

    verify_draft([9, 5], sample_at)
    assert asked == [0], "no row past the first rejected guess is sampled: its random state stays as without drafts"

"""How long a chat's draft is, per source and step: from its measured acceptance and what a step of n tokens costs.

The numbers are the formula's (engine/speculative.py, draft_lengths; engine/step_cost.py, the prior fitted in
engine/tuning.py): a step of n tokens costs 0.6 + 0.4 n one-token steps before this machine's steps are timed.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.protocol import SamplingParams
from engine.scheduler import Scheduler
from engine.speculative import Odds, Speculator, choose_drafts, draft_lengths
from engine.step_cost import StepCost, prior_cost_ratio
from tests.engine.fake_runner import FakeRunner, encode
from tests.engine.test_scheduler import run_until_idle, text_of

GREEDY = SamplingParams(temperature=0, max_new_tokens=200, speculative="auto")
ANSWER = "the quick brown fox jumps over the lazy dog and runs far away"


class PriorCost(StepCost):
    """The fitted prior only: the scripted runner's timings are this machine's noise, not a model's."""

    def observe(self, decoding: int, tokens: int, prompt_tokens: int, seconds: float) -> None:
        return None


def speedup(rate: float, length: int, chats: int) -> float:
    """Expected tokens per unit of time of a step of `chats` chats, one of them drafting `length` tokens
    accepted at `rate` each, over the same step without the draft."""
    ratio = prior_cost_ratio(chats)
    tokens = chats + sum(rate**i for i in range(1, length + 1))
    return tokens / (1.0 + ratio * length / chats) / chats


def guessing(rate: float, guess: list[int]) -> Speculator:
    speculator = Speculator(is_end=lambda token: False)
    speculator.guess = guess
    speculator.odds["lookup", 0] = Odds(accepted=rate * 100.0, tried=100.0, checked=10)
    return speculator


def test_the_prior_step_cost_is_the_fitted_line() -> None:
    assert prior_cost_ratio(1) == pytest.approx(0.4 / 1.0)
    assert prior_cost_ratio(4) == pytest.approx(1.6 / 2.2)
    assert prior_cost_ratio(16) == pytest.approx(6.4 / 7.0)


def test_a_source_accepted_90_percent_drafts_four_tokens_alone() -> None:
    assert draft_lengths([0.9], [16], prior_cost_ratio(1)) == [4]
    gains = [speedup(0.9, length, 1) for length in range(7)]
    assert gains[4] == max(gains) == pytest.approx(4.0951 / 2.6), "four tokens: the most tokens per second"
    assert choose_drafts([guessing(0.9, list(range(10)))], prior_cost_ratio(1)) == [[0, 1, 2, 3]]


def test_in_a_full_batch_a_90_percent_source_drafts_nothing() -> None:
    chats = 16
    assert speedup(0.9, 1, chats) == pytest.approx((16 + 0.9) / (1 + (6.4 / 7.0) / 16) / 16)
    assert speedup(0.9, 1, chats) < 1.0, "verifying one more token costs more than it is likely to give"
    assert draft_lengths([0.9] * chats, [16] * chats, prior_cost_ratio(chats)) == [0] * chats
    speculators = [guessing(0.9, list(range(10))) for _ in range(chats)]
    assert choose_drafts(speculators, prior_cost_ratio(chats), probe=False) == [[]] * chats  # type: ignore[arg-type]
    # at four chats the same odds still pay for a token or two each
    assert speedup(0.9, 1, 4) > 1.0 and draft_lengths([0.9] * 4, [16] * 4, prior_cost_ratio(4)) == [2, 2, 2, 2]


def test_a_source_accepted_almost_never_backs_off_to_no_draft() -> None:
    odds = Odds()
    for _ in range(3):
        odds.record(drafted=1, accepted=0)
    assert odds.rate == pytest.approx(0.512 / (0.512 * 2 + 0.8 * 0.8 + 0.8 + 1))
    assert odds.rate < prior_cost_ratio(1) and draft_lengths([odds.rate], [16], prior_cost_ratio(1)) == [0]


def test_a_pool_whose_guesses_miss_is_left_to_rare_single_probes() -> None:
    """Chat b's answer shares chat a's 3-grams but never what followed them (but for ">th": both start "the")."""
    wrong = "".join(ANSWER[i : i + 3] + "#" for i in range(0, 40, 4))  # "the#qui#k b#...": the pool says " ", "c", ...
    runner = FakeRunner({"tell me": ANSWER, "say it": wrong}, slots=1)
    scheduler = Scheduler(runner, PriorCost())
    scheduler.submit("a", encode("tell me>"), GREEDY)
    run_until_idle(scheduler)
    scheduler.submit("b", encode("say it>"), replace(GREEDY, temperature=0.7))  # no seed: it may draft from the pool
    sequence = scheduler.waiting[-1]
    assert text_of(run_until_idle(scheduler), "b") == wrong  # scripted: the same answer at any temperature
    pool = [(drafted, accepted) for _, source, drafted, accepted in scheduler.draft_log if source == "pool"]
    assert all(drafted == 1 for drafted, _ in pool) and sum(accepted for _, accepted in pool) <= 1, pool
    assert 2 <= len(pool) <= 5, f"a few single guesses, then pauses: {pool}"
    assert sequence.speculator is not None
    rate = sequence.speculator.odds["pool", 3].rate
    assert rate < prior_cost_ratio(1) and draft_lengths([rate], [16], prior_cost_ratio(1)) == [0]


def test_a_paused_source_does_not_hold_back_the_other() -> None:
    speculator = Speculator(is_end=lambda token: False)
    speculator.pauses["pool"] = [50, 64]  # the pool's guesses missed
    speculator.look_up([1, 2, 3, 4, 1, 2, 3], room=8)
    assert speculator.source == "lookup"
    assert choose_drafts([speculator], prior_cost_ratio(1)) == [[4]], "the chat's own lookup guesses at once"
    assert speculator.pauses["pool"][0] == 49, "the pool's pause counts the step"
    speculator.pause = 3  # now the lookup's own pause
    speculator.look_up([], room=8)
    assert choose_drafts([speculator], prior_cost_ratio(1)) == [[]]

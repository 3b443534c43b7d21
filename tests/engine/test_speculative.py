"""Prompt lookup, the odds that decide a draft's length, and the measured cost of a draft token."""

from __future__ import annotations

import math

import pytest

from engine.speculative import (
    DEFAULT_COST_RATIO,
    FIRST_PAUSE,
    MAX_DRAFT,
    Odds,
    PromptLookup,
    Speculator,
    StepCost,
)


def lookup_of(tokens: list[int]) -> PromptLookup:
    lookup = PromptLookup()
    lookup.extend(tokens)
    return lookup


def test_the_longest_matching_tail_wins_over_a_more_recent_shorter_one() -> None:
    # tail (7, 8, 9): found once, early, followed by 1 2; "9" alone last occurred later, followed by 5
    lookup = lookup_of([7, 8, 9, 1, 2, 3, 9, 5, 6, 7, 8, 9])
    assert lookup.match(4) == (3, [1, 2, 3, 9])


def test_of_equal_matches_the_most_recent_is_used_and_the_draft_is_capped() -> None:
    lookup = lookup_of([4, 5, 1, 4, 5, 2, 2, 2, 0, 4, 5])
    assert lookup.match(2) == (2, [2, 2])  # (4, 5) last continued with 2 2 2, not with 1
    assert lookup.match(0) == (2, [])


def test_a_tail_seen_nowhere_before_gives_no_draft_and_the_index_follows_new_tokens() -> None:
    lookup = lookup_of([1, 2, 3])
    assert lookup.match(5) == (0, [])
    lookup.extend([1, 2])
    assert lookup.match(5) == (2, [3, 1, 2])  # a draft may run into the tail itself (a repeating answer)


def test_a_draft_stops_before_an_end_of_generation_token() -> None:
    speculator = Speculator(is_end=lambda token: token == 0)
    speculator.odds[1] = Odds(accepted=10.0, tried=10.0)  # certain: as long as the lookup allows
    assert speculator.propose([5, 6, 7, 0, 9, 5], room=8, cost_ratio=0.5) == [6, 7]


def test_odds_make_a_draft_as_long_as_each_token_is_likelier_used_than_it_costs() -> None:
    assert Odds(accepted=9.0, tried=10.0).worth_drafting(0.5) == int(math.log(0.5) / math.log(0.9)) == 6
    assert Odds(accepted=9.0, tried=10.0).worth_drafting(0.05) == MAX_DRAFT  # a GPU: drafts cost little
    assert Odds(accepted=4.0, tried=10.0).worth_drafting(0.5) == 0
    assert Odds(accepted=3.0, tried=3.0).worth_drafting(0.9) == MAX_DRAFT
    odds = Odds()
    odds.record(drafted=8, accepted=3)  # 4 tokens tested: 3 held, the 4th did not, the rest never counted
    assert (odds.accepted, odds.tried) == pytest.approx((0.8 + 3, 1.6 + 4))


def test_a_chat_whose_guesses_keep_missing_waits_longer_each_time_until_one_holds() -> None:
    speculator = Speculator(is_end=lambda token: False)
    speculator.lookup.extend([1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2])  # the lookup always has the same guess

    lengths: list[int] = []

    def gaps_between_drafts(count: int, accepted: int) -> list[int]:
        gaps, empty = [], 0
        while len(gaps) < count:
            draft = speculator.propose([], room=16, cost_ratio=0.5)
            if draft:
                speculator.record(drafted=len(draft), accepted=min(accepted, len(draft)))
                lengths.append(len(draft))
                gaps.append(empty)
                empty = 0
            else:
                empty += 1
        return gaps

    assert gaps_between_drafts(4, accepted=0) == [0, FIRST_PAUSE, 2 * FIRST_PAUSE, 4 * FIRST_PAUSE]
    assert lengths == [1] * 4, "a guess that does not pay is a single token"
    # Guesses hold: while the odds are still too low to pay they come at the same pause (a hit does not
    # double it), then one every step.
    assert gaps_between_drafts(12, accepted=9) == [8 * FIRST_PAUSE] + [16 * FIRST_PAUSE] * 2 + [0] * 9
    assert lengths[4:] == sorted(lengths[4:]) and lengths[-1] == 9, f"they grow with the odds: {lengths}"


def test_step_cost_separates_a_steps_fixed_part_from_what_each_token_adds() -> None:
    cost = StepCost()
    assert cost.ratio(1) == DEFAULT_COST_RATIO  # nothing measured yet
    for tokens in [1, 3, 1, 9, 2, 17, 1, 5, 4, 1, 12, 2]:
        cost.observe(1, tokens, prompt_tokens=0, seconds=0.010 + 0.005 * tokens)
    cost.observe(1, 300, prompt_tokens=299, seconds=9.0)  # a prompt chunk: not a decode step, ignored
    assert cost.ratio(1) == pytest.approx(0.005 / 0.015)
    # four chats never timed together: one chat's line, where batched chats share the fixed part
    assert cost.ratio(4) == pytest.approx(4 * 0.005 / 0.030)


def test_step_cost_has_a_line_for_each_number_of_chats_decoding_together() -> None:
    cost = StepCost()
    for tokens in [1, 3, 1, 9, 2, 17, 1, 5, 4, 1, 12, 2]:
        cost.observe(1, tokens, prompt_tokens=0, seconds=0.020 + 0.005 * tokens)  # alone: drafts ride along
        cost.observe(4, tokens + 3, prompt_tokens=0, seconds=0.004 + 0.016 * (tokens + 3))  # four: each token counts
    assert cost.ratio(1) == pytest.approx(0.005 / 0.025)
    assert cost.ratio(4) == pytest.approx(4 * 0.016 / (0.004 + 4 * 0.016))
    assert cost.ratio(3) == pytest.approx(3 * 0.016 / (0.004 + 3 * 0.016)), "the nearest count's line"


def test_step_cost_keeps_its_default_when_every_step_had_the_same_size() -> None:
    cost = StepCost()
    for _ in range(20):
        cost.observe(1, 1, prompt_tokens=0, seconds=0.012)
    assert cost.ratio(1) == DEFAULT_COST_RATIO


def test_step_cost_keeps_its_last_fit_when_the_drafts_stop_and_every_step_has_one_size() -> None:
    cost = StepCost()
    for tokens in [1, 3, 1, 9, 2, 17, 1, 5, 4, 1, 12, 2]:
        cost.observe(1, tokens, prompt_tokens=0, seconds=0.020 + 0.018 * tokens)  # a draft token costs nearly a step
    expensive = cost.ratio(1)
    assert expensive == pytest.approx(0.018 / 0.038)
    for _ in range(300):  # drafting stopped: the spread of sizes fades from the fit's memory
        cost.observe(1, 1, prompt_tokens=0, seconds=0.038)
    assert cost.ratio(1) == pytest.approx(expensive), "it does not fall back to the default and start again"


def test_a_guess_that_holds_but_does_not_pay_still_waits_before_the_next() -> None:
    speculator = Speculator(is_end=lambda token: False)
    speculator.lookup.extend([1, 2, 3, 4, 5, 1, 2])
    pattern = []
    for _ in range(40):
        draft = speculator.propose([], room=16, cost_ratio=1.0)  # a draft token costs a whole step: never pays
        if draft:
            speculator.record(drafted=len(draft), accepted=len(draft))
        pattern.append(len(draft))
    assert sum(pattern) <= 40 // (FIRST_PAUSE + 1) + 1, f"a single guess now and then: {pattern}"

"""Prompt lookup, the odds that decide a draft's length, and the measured cost of a draft token."""

from __future__ import annotations

import pytest

from engine.speculative import (
    FIRST_PAUSE,
    MAX_DRAFT,
    MAX_PAUSE,
    Odds,
    PromptLookup,
    Speculator,
    draft_lengths,
)
from engine.step_cost import StepCost, prior_cost_ratio


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
    speculator.odds["lookup", 1] = Odds(accepted=10.0, tried=10.0)  # certain: as long as the lookup allows
    assert speculator.propose([5, 6, 7, 0, 9, 5], room=8, cost_ratio=0.5) == [6, 7]


def best_single_length(rate: float, cost_ratio: float) -> int:
    """By brute force: the draft length with the most expected tokens per unit of a one-chat step's time."""
    def tokens_per_time(length: int) -> float:
        return sum(rate**i for i in range(length + 1)) / (1.0 + cost_ratio * length)
    return max(range(MAX_DRAFT + 1), key=tokens_per_time)


def test_a_draft_is_as_long_as_gives_the_most_tokens_per_second() -> None:
    for rate, cost_ratio in [(0.9, 0.39), (0.95, 0.39), (0.7, 0.39), (0.9, 0.05), (0.99, 0.02), (0.5, 0.2)]:
        assert draft_lengths([rate], [MAX_DRAFT], cost_ratio) == [best_single_length(rate, cost_ratio)], (rate, cost_ratio)
    # p = 0.9 on a 2-core CPU: 4 tokens, where "each token likelier used than it costs" drafted 8
    assert draft_lengths([0.9], [MAX_DRAFT], 0.39) == [4]
    assert draft_lengths([0.35], [MAX_DRAFT], 0.39) == [0]  # a first token less likely used than it costs
    assert draft_lengths([1.0], [MAX_DRAFT], 0.9) == [MAX_DRAFT]
    assert draft_lengths([0.9], [3], 0.05) == [3], "never longer than the guess"
    odds = Odds()
    odds.record(drafted=8, accepted=3)  # 4 tokens tested: 3 held, the 4th did not, the rest never counted
    assert (odds.accepted, odds.tried) == pytest.approx((0.8 + 3, 1.6 + 4))


def test_chats_of_one_step_share_it_the_likeliest_guesses_first() -> None:
    # Four chats together: a step of their one token each costs 1, each draft token 0.5 / 4 of it.
    rates, limits = [0.95, 0.6, 0.0, 0.9], [MAX_DRAFT, MAX_DRAFT, 0, 2]
    lengths = draft_lengths(rates, limits, 0.5)
    assert lengths[0] > lengths[1] and lengths[2] == 0 and lengths[3] == 2, lengths

    def tokens_per_time(choice: tuple[int, ...]) -> float:
        tokens = sum(sum(rate**i for i in range(n + 1)) for rate, n in zip(rates, choice))
        return tokens / (1.0 + 0.5 / 4 * sum(choice))

    best = max(((a, b, 0, d) for a in range(MAX_DRAFT + 1) for b in range(MAX_DRAFT + 1) for d in range(3)),
               key=tokens_per_time)
    assert tokens_per_time(tuple(lengths)) == pytest.approx(tokens_per_time(best))
    assert draft_lengths([0.95, 0.9], [MAX_DRAFT, MAX_DRAFT], 0.9) == [1, 0], "dear drafts: only the likeliest token"
    assert draft_lengths([0.3, 0.4], [MAX_DRAFT, MAX_DRAFT], 0.9) == [0, 0], "none where no draft pays"


def test_of_several_places_with_the_tail_the_one_nearest_where_the_chat_copies_from_wins() -> None:
    passage = [1, 2, 3, 4, 5, 6, 7, 8, 5, 9]  # "5" twice: followed by 6, and later by 9
    unknown = lookup_of(passage + [1, 2, 3, 0, 5])
    assert unknown.match(3) == (1, [9, 1, 2]), "nothing known of where it copies from: the latest"
    lookup = lookup_of(passage + [1, 2])
    assert lookup.match(3) == (2, [3, 4, 5]) and lookup.copying_from == 1  # copying the passage
    lookup.extend([3, 0, 5])  # "4" changed into "0", then on with the passage
    assert lookup.copying_from == 4
    assert lookup.match(3) == (1, [6, 7, 8]), "the 5 where it copies, not the later one"


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

    # while nothing of the turn has ever held, the pause grows fourfold (up to MAX_PAUSE)
    assert gaps_between_drafts(4, accepted=0) == [0, FIRST_PAUSE, 4 * FIRST_PAUSE, 16 * FIRST_PAUSE]
    assert lengths == [1] * 4, "a guess that does not pay is a single token"
    # Guesses hold: while the odds are still too low to pay they come at the same pause (a hit does not
    # lengthen it), then one every step.
    assert gaps_between_drafts(12, accepted=9) == [MAX_PAUSE] * 3 + [0] * 9
    assert lengths[4:] == sorted(lengths[4:]) and lengths[-1] == 9, f"they grow with the odds: {lengths}"


def test_step_cost_separates_a_steps_fixed_part_from_what_each_token_adds() -> None:
    cost = StepCost()
    assert cost.ratio(1) == prior_cost_ratio(1) == pytest.approx(0.4)  # nothing measured yet: 0.4 / (0.6 + 0.4)
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
    assert cost.ratio(1) == prior_cost_ratio(1)


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


def test_a_pause_holds_back_guesses_but_not_a_match_whose_drafts_have_paid() -> None:
    speculator = Speculator(is_end=lambda token: False)
    speculator.odds["lookup", 3] = Odds(accepted=9.0, tried=10.0, checked=3)  # 3-token matches have paid in this turn
    speculator.pause = 8  # after a 1-token guess that missed
    assert speculator.propose([1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3], room=16, cost_ratio=0.39) == [4, 5, 6, 7]
    assert speculator.pause == 7
    # a 1-token match, its odds untried: held back by the pause
    assert speculator.propose([9, 4], room=16, cost_ratio=0.39) == []
    speculator.pause = 0
    assert speculator.propose([], room=16, cost_ratio=0.39) == [5], "unpaused: a one-token guess"


def test_once_a_guess_has_held_the_pause_after_a_miss_only_doubles() -> None:
    speculator = Speculator(is_end=lambda token: False)
    speculator.lookup.extend([1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2])
    assert speculator.propose([], room=16, cost_ratio=0.9) == [3]
    speculator.record(drafted=1, accepted=1)  # held, but at this cost it does not pay: a pause, not longer
    assert (speculator.pause, speculator.next_pause) == (FIRST_PAUSE, FIRST_PAUSE)
    speculator.pause = 0
    speculator.propose([], room=16, cost_ratio=0.9)
    speculator.record(drafted=1, accepted=0)
    assert (speculator.pause, speculator.next_pause) == (FIRST_PAUSE, 2 * FIRST_PAUSE)

"""The shared n-gram pool: what it learns and forgets, when a chat drafts from it, and its tally per source."""

from __future__ import annotations

from dataclasses import replace

from engine.ngram_pool import NgramPool
from engine.protocol import SamplingParams
from engine.scheduler import Scheduler
from engine.sequence import Sequence
from engine.speculative import Odds, Speculator
from tests.engine.fake_runner import FakeRunner, encode
from tests.engine.test_scheduler import run_until_idle, text_of
from tests.engine.test_speculative_scheduler import FixedCost

GREEDY = SamplingParams(temperature=0, max_new_tokens=200, speculative="auto")
SAMPLED = SamplingParams(temperature=0.7, max_new_tokens=200, speculative="auto")  # no seed: need not repeat
ANSWER = "the quick brown fox jumps over the lazy dog and runs far away"


def test_the_pool_chains_what_followed_each_ngram_and_keeps_the_latest_follower() -> None:
    pool = NgramPool(ngram=3)
    pool.add([1, 2, 3, 4, 5, 6], new=6)
    assert pool.draft([9, 1, 2, 3], limit=8) == [4, 5, 6], "chained until an n-gram with no follower"
    assert pool.draft([9, 1, 2, 3], limit=2) == [4, 5]
    assert pool.draft([2, 3], limit=8) == [], "fewer tokens than an n-gram"
    pool.add([1, 2, 3, 7], new=1)  # only the n-gram ending at the new token's predecessor is new
    assert pool.draft([1, 2, 3], limit=8) == [7], "the latest follower wins"
    assert len(pool) == 3  # (1,2,3) (2,3,4) (3,4,5): (4,5,6) never had a follower


def test_the_pool_is_bounded_and_drops_the_ngram_used_least_recently() -> None:
    pool = NgramPool(ngram=2, max_entries=3)
    pool.add([1, 2, 3, 4], new=4)  # (1,2)->3 (2,3)->4
    assert pool.draft([1, 2], limit=1) == [3]  # (1,2) used: now the most recent
    pool.add([5, 6, 7, 8], new=4)  # (5,6)->7 (6,7)->8: four entries, one must go
    assert len(pool) == 3
    assert pool.draft([2, 3], limit=1) == [], "the least recently used went"
    assert pool.draft([1, 2], limit=1) == [3] and pool.draft([6, 7], limit=1) == [8]


def test_a_chat_drafts_from_the_pool_only_where_its_own_context_matches_fewer_tokens() -> None:
    pool = NgramPool(ngram=3)
    pool.add([10, 11, 12, 13, 14], new=5)  # another chat wrote this
    speculator = Speculator(is_end=lambda token: token == 0, pool=pool)
    assert speculator.look_up([20, 21, 10, 11, 12], room=8) == [13, 14] and speculator.source == "pool"
    own = Speculator(is_end=lambda token: token == 0, pool=pool)
    # Its own context has 10 11 12 followed by 99: a 3-token match of its own beats the pool's
    assert own.look_up([10, 11, 12, 99, 5, 10, 11, 12], room=8) == [99, 5, 10, 11, 12] and own.source == "lookup"


def test_odds_and_the_tally_are_kept_per_source() -> None:
    pool = NgramPool(ngram=3)
    pool.add([10, 11, 12, 13, 14, 15], new=6)
    speculator = Speculator(is_end=lambda token: False, pool=pool)
    speculator.look_up([1, 10, 11, 12], room=8)
    speculator.record(drafted=3, accepted=0)
    speculator.look_up([13, 1, 2, 1], room=8)  # its own "1" matches: lookup, 1-token n-gram
    assert speculator.source == "lookup" and speculator.guess == [2, 1]
    speculator.record(drafted=2, accepted=2)
    assert speculator.by_source == {"pool": (3, 0), "lookup": (2, 2)}
    assert (speculator.drafted, speculator.accepted) == (5, 2)
    assert speculator.odds["pool", 3].rate == 0.8 / 2.6  # prior 1 of 2, faded by 0.8, then 0 of 1 tried
    assert speculator.odds["lookup", 1].rate == 2.8 / 3.6


def test_a_second_chat_repeating_the_first_ones_answer_drafts_it_from_the_pool() -> None:
    """Chat b is asked what chat a was: its own prompt has none of the answer, the pool has all of it."""
    replies = {"tell me": ANSWER, "again, tell me": ANSWER}

    def serve(pool: bool) -> tuple[list, Scheduler, Sequence]:
        runner = FakeRunner(replies, slots=2)  # scripted: it answers the same at any temperature
        scheduler = Scheduler(runner, FixedCost(0.2), ngram_pool=pool)
        scheduler.submit("a", encode("tell me>"), GREEDY)
        events = run_until_idle(scheduler, 500)
        scheduler.submit("b", encode("again, tell me>"), SAMPLED)
        sequence = scheduler.waiting[-1]
        return events + run_until_idle(scheduler, 500), scheduler, sequence

    events_off, off_scheduler, off = serve(False)
    events_on, _, on = serve(True)
    assert text_of(events_on, "b") == text_of(events_off, "b") == ANSWER
    assert on.output == off.output
    assert off.speculator is not None and on.speculator is not None
    assert off_scheduler.ngram_pool is None and "pool" not in off.speculator.by_source
    drafted, accepted = on.speculator.by_source["pool"]
    assert accepted >= 40 and accepted >= 0.8 * drafted, f"most of the answer came from the pool: {drafted}, {accepted}"
    assert len(on.output) == len(ANSWER)


def test_an_answer_that_must_repeat_feeds_the_pool_but_drafts_from_its_own_conversation_only() -> None:
    """Greedy, or sampled with a seed: the same request must give the same answer, whatever other chats wrote."""
    for params in (GREEDY, SamplingParams(temperature=0.7, seed=7, max_new_tokens=200, speculative="auto")):
        scheduler = Scheduler(FakeRunner({"tell me": ANSWER, "again, tell me": ANSWER}, slots=2), FixedCost(0.2))
        scheduler.submit("a", encode("tell me>"), GREEDY)
        run_until_idle(scheduler, 500)
        fed = len(scheduler.ngram_pool or ())
        scheduler.submit("b", encode("again, tell me>"), params)
        sequence = scheduler.waiting[-1]
        assert text_of(run_until_idle(scheduler, 500), "b") == ANSWER
        assert sequence.speculator is not None and "pool" not in sequence.speculator.by_source
        assert fed > 0 and scheduler.ngram_pool is not None and len(scheduler.ngram_pool) >= fed


def test_each_model_has_its_own_pool() -> None:
    first, second = Scheduler(FakeRunner({}, slots=1)), Scheduler(FakeRunner({}, slots=1))
    assert first.ngram_pool is not None and second.ngram_pool is not None
    assert first.ngram_pool is not second.ngram_pool, "token ids mean something only within one vocabulary"


def test_the_stats_count_drafts_per_source_over_the_last_seconds() -> None:
    from engine.engine_stats import StatsKeeper

    class Loaded:  # what StatsKeeper reads of a loaded model
        def __init__(self, work: Scheduler) -> None:
            self.work = work

    scheduler = Scheduler(FakeRunner({}, slots=1))
    scheduler.draft_log.extend([(0.0, "lookup", 4, 1), (9.0, "lookup", 5, 3), (9.5, "pool", 6, 6),
                                (9.8, "lookup", 2, 0)])
    keeper = StatsKeeper(interval_s=0.5)
    counts = keeper._draft_counts([Loaded(scheduler)], now=10.0)  # type: ignore[list-item]
    assert counts == (("lookup", 7, 3), ("pool", 6, 6)), "the draft at 0 s is older than the window"
    assert not scheduler.draft_log


def test_a_turn_with_drafts_off_feeds_and_takes_nothing_from_the_pool() -> None:
    runner = FakeRunner({"tell me": ANSWER}, slots=1)
    scheduler = Scheduler(runner, FixedCost(0.2))
    scheduler.submit("a", encode("tell me>"), replace(GREEDY, speculative="off"))
    run_until_idle(scheduler, 500)
    assert scheduler.ngram_pool is not None and len(scheduler.ngram_pool) == 0
    assert Odds().rate == 0.5

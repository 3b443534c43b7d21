"""The scheduler's side of constraints and log-probabilities, on the scripted runner."""

from __future__ import annotations

from dataclasses import replace

from engine.protocol import Constraint, Logprobs, SamplingParams, Token, TurnStarted
from engine.scheduler import Scheduler
from engine.scheduling.results import StepResults
from engine.sequence import Sequence
from tests.engine.fake_runner import FakeRunner, encode
from tests.engine.test_scheduler import finished, run_until_idle, text_of
from tests.engine.test_speculative_scheduler import QUOTE, FixedCost

GREEDY = SamplingParams(temperature=0, max_new_tokens=200, speculative="auto")
CALL = Constraint("regex", "[a-z ]+")


def test_a_constraint_that_does_not_compile_ends_the_turn_with_its_reason() -> None:
    runner = FakeRunner({"a": "ok"})
    scheduler = Scheduler(runner)
    bad = replace(GREEDY, constraint=Constraint("json_schema", '{"type": "array", "uniqueItems": true}'))
    events = scheduler.submit("a", encode("a>"), bad) + run_until_idle(scheduler)
    assert not [e for e in events if isinstance(e, TurnStarted)]
    assert finished(events, "a").reason == "error"
    assert "uniqueItems" in finished(events, "a").message


def test_a_constraint_installed_between_steps_reaches_the_runner_before_the_next_token() -> None:
    runner = FakeRunner({"a": "hello"})
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), replace(GREEDY, speculative="off"))
    scheduler.step()
    assert scheduler.constrain("a", CALL)
    steps_before = len(runner.steps)
    scheduler.step()
    assert runner.constraints == [(0, CALL)] and len(runner.steps) == steps_before + 1
    assert not scheduler.constrain("nobody", CALL)


class OpensACall(StepResults):
    """Stands in for the parser: on the first `marker` character of an answer, a constraint starts."""

    marker = "j"

    def _accept(self, sequence: Sequence, token: int, now: float) -> list:
        events = super()._accept(sequence, token, now)
        if chr(token) == self.marker and not self.runner.constraints:  # type: ignore[attr-defined]
            sequence.constrain_next(CALL)
        return events


def test_a_constraint_started_mid_draft_drops_the_rest_of_the_step_and_loses_no_token() -> None:
    runner = FakeRunner({QUOTE: QUOTE})
    scheduler = Scheduler(runner, FixedCost(0.2))
    scheduler._results = OpensACall(runner, scheduler.slots, scheduler.sampled_log, scheduler.draft_log)
    events = scheduler.submit("a", encode(f"{QUOTE}>"), GREEDY) + run_until_idle(scheduler)
    assert text_of(events, "a") == QUOTE, "every token once, in order"  # the fake runner checks the cache too
    assert runner.constraints == [(0, CALL)]
    accepted = [n for step in runner.drafts for _, _, n in step]
    assert sum(accepted) > 0, "drafts were accepted around the call's start"
    after_marker = QUOTE[QUOTE.index(OpensACall.marker) + 1:]
    under = "".join(chr(token) for token in runner.sampled_under[0] if token)
    assert under == after_marker, "every token after the call opened was sampled under its constraint"
    assert finished(events, "a").reason == "stop"


def test_logprobs_come_with_their_tokens_and_before_the_end() -> None:
    runner = FakeRunner({"a": "hello there", "b": "free"}, slots=2)
    scheduler = Scheduler(runner, FixedCost(0.2))
    scheduler.submit("a", encode("a>"), replace(GREEDY, logprobs=0))
    scheduler.submit("b", encode("b>"), GREEDY)
    events = run_until_idle(scheduler)
    mine = [e for e in events if isinstance(e, Logprobs)]
    assert all(e.chat_id == "a" for e in mine), "only the chat that asked"
    entries = [entry for e in mine for entry in e.entries]
    assert "".join(entry.token for entry in entries) == "hello there" == text_of(events, "a")
    assert [entry.logprob for entry in entries] == [-ord(c) / 1000 for c in "hello there"]
    end = events.index(finished(events, "a"))
    assert all(events.index(e) < end for e in mine)
    assert not any(isinstance(e, Token) and e.chat_id == "a" for e in events[end:])


JSON = Constraint("json_schema", '{"type": "object"}')
REPLY = '{"name": "Ana", "city": "Porto"}'


def test_tokens_the_constraint_forces_come_as_one_draft_and_are_no_guess() -> None:
    """The fake forces the reply's punctuation and spaces under a constraint (FakeRunner.forced_tokens): each run
    of them is fed as the chat's draft in one step, every one kept, none counted as a guess, with drafting off."""
    free, forced = FakeRunner({"a": REPLY}, slots=1), FakeRunner({"a": REPLY}, slots=1, forced_chars='{}":, ')
    answers = {}
    for runner in (free, forced):
        scheduler = Scheduler(runner, FixedCost(0.2))
        params = replace(GREEDY, speculative="off", constraint=JSON)
        answers[id(runner)] = scheduler.submit("a", encode("a>"), params) + run_until_idle(scheduler)
    events = answers[id(forced)]
    assert text_of(events, "a") == text_of(answers[id(free)], "a") == REPLY
    drafts = [draft for step in forced.drafts for draft in step]
    assert drafts and all(n == kept for _, n, kept in drafts), "a forced token is what its row samples"
    assert max(n for _, n, _ in drafts) >= 3 and sum(n for _, n, _ in drafts) >= 8  # `", "` and `": "` each a run
    assert len(forced.steps) == len(free.steps) - sum(n for _, n, _ in drafts)
    stats = finished(events, "a").stats
    assert stats.generated_tokens == len(REPLY) and (stats.drafted_tokens, stats.accepted_tokens) == (0, 0)
    assert stats.forced_tokens == sum(n for _, n, _ in drafts) and finished(answers[id(free)], "a").stats.forced_tokens == 0
    assert not [d for step in free.drafts for d in step], "drafting off: nothing guessed"


def test_forced_tokens_never_run_past_max_tokens() -> None:
    runner = FakeRunner({"a": '{"":::::::::::::::}'}, slots=1, forced_chars='{}":')
    scheduler = Scheduler(runner, FixedCost(0.2))
    events = scheduler.submit("a", encode("a>"), replace(GREEDY, max_new_tokens=6, constraint=JSON))
    events += run_until_idle(scheduler)
    assert text_of(events, "a") == '{"":::' and finished(events, "a").reason == "length"
    assert sum(len(w) for w in runner.kv) <= len("a>") + 6


def test_beside_other_chats_forced_drafts_are_cut_to_the_length_that_gives_most_tokens_per_pass() -> None:
    """llama.cpp runs a pass per distinct number of tokens its chats feed (splits_uneven_steps)."""
    from engine.scheduling.plan import _even

    short, long = [1, 2, 3], list(range(8))
    assert _even([[], [], [], short]) == [[], [], [], []], "7 tokens in two passes: slower than 4 in one"
    assert _even([[], [], [], long]) == [[], [], [], long], "12 tokens in two passes"
    assert _even([short, long, short[:2], long]) == [short[:2], long[:2], short[:2], long[:2]], "12 in one pass"
    assert _even([[], long, long[:5], []]) == [[], long[:5], long[:5], []], "4 + 10 in two passes"

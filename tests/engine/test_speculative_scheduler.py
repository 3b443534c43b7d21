"""Drafts in the scheduler, on the scripted runner: planning, acceptance, the cache, the ends of a turn."""

from __future__ import annotations

from dataclasses import replace

from engine.protocol import SamplingParams
from engine.scheduler import Scheduler
from engine.sequence import Sequence
from engine.step_cost import StepCost
from tests.engine.fake_runner import FakeRunner, encode
from tests.engine.test_scheduler import finished, run_until_idle, text_of

GREEDY = SamplingParams(temperature=0, max_new_tokens=200, speculative="auto")
OFF = replace(GREEDY, speculative="off")
QUOTE = "the quick brown fox jumps over the lazy dog and runs far away"


class FixedCost(StepCost):
    """A draft token's cost pinned, so the drafts do not depend on this machine's timings."""

    def __init__(self, ratio: float) -> None:
        super().__init__()
        self.fixed = ratio

    def ratio(self, decoding: int) -> float:
        return self.fixed


def serve(runner: FakeRunner, prompts: dict[str, str], params: SamplingParams = GREEDY, cost: float = 0.2,
          limit: int = 500) -> tuple[list, dict[str, Sequence], Scheduler]:
    scheduler = Scheduler(runner, FixedCost(cost))
    sequences = {}
    for chat, text in prompts.items():
        scheduler.submit(chat, encode(text), params)
        sequences[chat] = scheduler.waiting[-1]
    return run_until_idle(scheduler, limit), sequences, scheduler


def drafted(runner: FakeRunner, slot: int = 0) -> list[tuple[int, int]]:
    return [(n, accepted) for step in runner.drafts for s, n, accepted in step if s == slot]


def test_a_chat_copying_its_prompt_gets_long_drafts_accepted_and_the_same_answer_sooner() -> None:
    replies = {QUOTE: QUOTE, "b": "a short and different answer"}
    plain = FakeRunner(replies, slots=2)
    events_off, _, _ = serve(plain, {"a": f"{QUOTE}>", "b": "b>"}, OFF)
    runner = FakeRunner(replies, slots=2)
    events, _, _ = serve(runner, {"a": f"{QUOTE}>", "b": "b>"})
    assert text_of(events, "a") == text_of(events_off, "a") == QUOTE
    assert text_of(events, "b") == text_of(events_off, "b")
    assert len(runner.steps) < len(plain.steps) * 0.6
    assert max(n for n, accepted in drafted(runner, 0) if n == accepted) >= 8, "long runs wholly accepted"
    both = [step for step in runner.drafts if {0, 1} <= {s for s, _, _ in step}]
    assert both, "two chats' drafts were checked in the same forward pass"
    stats = finished(events, "a").stats
    assert (stats.drafted_tokens, stats.accepted_tokens) == tuple(map(sum, zip(*drafted(runner, 0))))
    assert stats.generated_tokens == finished(events_off, "a").stats.generated_tokens


def test_a_rejected_tail_leaves_the_cache_and_the_slot_table_agrees_with_the_runner() -> None:
    runner = FakeRunner({"abcdefghijkl": "abcdefghiXYZ"}, slots=1)
    scheduler = Scheduler(runner, FixedCost(0.02))
    scheduler.submit("a", encode("abcdefghijkl>"), GREEDY)
    sequence = scheduler.waiting[-1]
    rejected = False
    while scheduler.has_work():
        scheduler.step()
        if runner.drafts[-1] and runner.drafts[-1][0][2] < runner.drafts[-1][0][1]:
            rejected = True
            assert runner.kv[0] == scheduler.slots[0].cached
            assert runner.kv[0] == (sequence.prompt + sequence.output)[: sequence.computed]
    assert rejected and "".join(map(chr, sequence.output)) == "abcdefghiXYZ"


def test_a_stop_string_inside_an_accepted_draft_ends_the_answer_exactly_there() -> None:
    quote = "please say hello STOP and then nothing more at all"
    params = replace(GREEDY, stop=("STOP",))
    plain = FakeRunner({quote: quote}, slots=1)
    events_off, _, _ = serve(plain, {"a": f"{quote}>"}, replace(params, speculative="off"))
    runner = FakeRunner({quote: quote}, slots=1)
    events, sequences, _ = serve(runner, {"a": f"{quote}>"}, params, cost=0.02)
    assert text_of(events, "a") == text_of(events_off, "a") == "please say hello "
    assert finished(events, "a").reason == "stop" and finished(events, "a").text == "please say hello "
    assert finished(events, "a").stats.generated_tokens == len("please say hello STOP")
    assert "".join(map(chr, sequences["a"].output)) == "please say hello STOP", "nothing after it is kept"
    accepted_before_stop = sum(accepted for _, accepted in drafted(runner))
    assert accepted_before_stop > len("please say hello STOP") // 2, "the stop came inside accepted drafts"


def test_max_new_tokens_inside_a_draft_gives_exactly_that_many_and_no_draft_runs_past_it() -> None:
    runner = FakeRunner({QUOTE: QUOTE}, slots=1)
    events, sequences, _ = serve(runner, {"a": f"{QUOTE}>"}, replace(GREEDY, max_new_tokens=23), cost=0.02)
    assert text_of(events, "a") == QUOTE[:23] and finished(events, "a").reason == "length"
    sequence = sequences["a"]
    assert len(sequence.output) == 23
    assert runner.kv[0] == (sequence.prompt + sequence.output)[:-1], "no guess past the limit was fed"


def test_a_context_filling_up_mid_draft_ends_where_it_would_without_drafts() -> None:
    quote = "".join(chr(0x100 + i) for i in range(40))
    plain = FakeRunner({quote: quote}, slots=1, context_length=60)
    events_off, _, _ = serve(plain, {"a": f"{quote}>"}, OFF)
    runner = FakeRunner({quote: quote}, slots=1, context_length=60)  # the fake refuses tokens past 60
    events, _, _ = serve(runner, {"a": f"{quote}>"}, cost=0.02)
    end = finished(events, "a")
    assert end.reason == finished(events_off, "a").reason == "context_full" and "context is full" in end.message
    assert text_of(events, "a") == text_of(events_off, "a") == quote[:19]
    last_drafted, last_accepted = drafted(runner)[-1]
    assert last_drafted == last_accepted and len(runner.kv[0]) == 60, "the last draft was cut to the room left"


def test_cancel_after_a_draft_step_keeps_the_cache_true_for_the_next_turn() -> None:
    runner = FakeRunner({QUOTE: QUOTE[:20] + "!", "more": "sure"}, slots=1)
    scheduler = Scheduler(runner, FixedCost(0.02))
    scheduler.submit("a", encode(f"{QUOTE}>"), GREEDY)
    sequence = scheduler.waiting[-1]
    while not any(accepted < n for step in runner.drafts for _, n, accepted in step):
        scheduler.step()  # until a draft ran into the '!' and its tail was dropped
    assert scheduler.running() == [sequence]
    events = scheduler.cancel("a")
    answer = "".join(map(chr, sequence.output))
    assert finished(events, "a").reason == "cancelled" and QUOTE.startswith(answer.rstrip("!"))
    assert runner.kv[0] == scheduler.slots[0].cached == (sequence.prompt + sequence.output)[: sequence.computed]
    scheduler.submit("a", encode(f"{QUOTE}>{answer}|more>"), GREEDY)
    events = []
    while scheduler.has_work():
        events += scheduler.step()
    assert text_of(events, "a") == "sure"
    assert finished(events, "a").stats.reused_tokens == sequence.computed


def test_a_chat_whose_drafts_keep_missing_stops_drafting() -> None:
    letters = "".join(chr(0x100 + i) for i in range(60))
    answer = letters[::-1]  # every letter was seen before, but followed by another than the answer's next
    runner = FakeRunner({letters: answer}, slots=1)
    events, _, _ = serve(runner, {"a": f"{letters}>"}, cost=0.5)
    assert text_of(events, "a") == answer
    checks = drafted(runner)
    assert sum(accepted for _, accepted in checks) == 0
    assert len(checks) <= 5 and all(n == 1 for n, _ in checks), f"a few single guesses, then pauses: {checks}"
    late = [step for step in runner.drafts[-30:] if step]
    assert len(late) <= 1, "the last half of the answer went almost without guesses"


def test_drafts_take_only_a_share_of_the_budget_while_a_prompt_waits() -> None:
    runner = FakeRunner({QUOTE: QUOTE, "x" * 60: "y"}, slots=2, batch_tokens=20)
    scheduler = Scheduler(runner, FixedCost(0.02))
    scheduler.submit("a", encode(f"{QUOTE}>"), GREEDY)
    for _ in range(8):  # a's drafts grow to the whole budget
        scheduler.step()
    assert max(n for n, _ in drafted(runner)) > 5
    scheduler.submit("long", encode("x" * 60 + ">"), GREEDY)
    scheduler.step()
    scheduler.step()
    shape = {slot: n for slot, n, _ in runner.steps[-1]}
    draft = sum(n for _, n, _ in runner.drafts[-1])
    assert shape[0] == 1 and draft <= (20 - 1) // 4, "a quarter of what the decode token leaves"
    assert shape[1] == 20 - 1 - draft, "the prompt gets the rest"


def test_no_drafts_when_the_turn_says_off_or_the_runner_cannot_drop_a_tail() -> None:
    for runner, params in ((FakeRunner({QUOTE: QUOTE}, slots=1), OFF),
                           (FakeRunner({QUOTE: QUOTE}, slots=1, can_draft=False), GREEDY)):
        events, _, _ = serve(runner, {"a": f"{QUOTE}>"}, params)
        assert text_of(events, "a") == QUOTE
        assert not any(runner.drafts) and finished(events, "a").stats.drafted_tokens == 0
        assert finished(events, "a").stats.acceptance is None


def test_drafts_share_the_budget_equally_and_a_short_draft_leaves_its_part_to_the_others() -> None:
    quotes = {f"{letter} {QUOTE}": f"{letter} {QUOTE}" for letter in "abc"}
    runner = FakeRunner({**quotes, "d": "dd"}, slots=4, batch_tokens=16)
    _, sequences, _ = serve(runner, {**{q[0]: f"{q}>" for q in quotes}, "d": "d>"}, cost=0.02)
    assert [seq.output for seq in sequences.values()] == [encode(reply) for reply in [*quotes, "dd"]]
    shared = False
    for shape, drafts in zip(runner.steps, runner.drafts):
        if not drafts or not all(n == 1 and sample for _, n, sample in shape):
            continue  # a prompt was read beside them: that budget is another test's
        budget, sizes = 16 - len(shape), sorted(n for _, n, _ in drafts)
        for index, size in enumerate(sizes):  # shortest first, none more than an equal part of what is left
            assert size <= (budget - sum(sizes[:index])) // (len(shape) - index), f"unfair: {drafts}"
        shared |= len(drafts) > 1 and sizes[-1] > budget // len(shape)
    assert shared, "a chat with a short draft left its part to another"
    assert max(n for step in runner.drafts for _, n, _ in step) == 16 - 1, "a chat alone may take the whole budget"


def _missing_beside_another(splits: bool) -> tuple[FakeRunner, list]:
    """Two chats whose guesses always miss (each answer is its prompt backwards), decoding together."""
    letters = "".join(chr(0x100 + i) for i in range(60))
    other = "".join(chr(0x200 + i) for i in range(60))
    runner = FakeRunner({letters: letters[::-1], other: other[::-1]}, slots=2, splits_uneven_steps=splits)
    events, _, _ = serve(runner, {"a": f"{letters}>", "b": f"{other}>"}, cost=0.5)
    return runner, events


def _both_decoding(runner: FakeRunner) -> list[list[tuple[int, int, int]]]:
    return [drafts for shape, drafts in zip(runner.steps, runner.drafts)
            if len(shape) == 2 and all(n == 1 and sample for _, n, sample in shape)]


def test_where_uneven_steps_split_a_chat_beside_others_makes_no_probe_that_only_learns_the_odds() -> None:
    runner, events = _missing_beside_another(splits=True)
    assert text_of(events, "a") == "".join(chr(0x100 + i) for i in range(60))[::-1]
    assert len(_both_decoding(runner)) > 50 and not any(_both_decoding(runner)), "no guess while both decode"
    plain, _ = _missing_beside_another(splits=False)
    assert sum(map(len, _both_decoding(plain))) > 2, "one padded pass: the probes go on"
    alone = FakeRunner({"x" * 3: "y"}, slots=1, splits_uneven_steps=True)
    letters = "".join(chr(0x100 + i) for i in range(60))
    alone.replies = {letters: letters[::-1]}
    serve(alone, {"a": f"{letters}>"}, cost=0.5)
    assert any(alone.drafts), "a chat decoding alone still probes"

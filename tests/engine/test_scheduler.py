"""Scheduler unit tests driven by a scripted runner: admission, chunking, reuse, stops."""

from __future__ import annotations

from engine.protocol import SamplingParams, Token, TurnFinished, TurnStarted
from engine.scheduler import Scheduler
from tests.engine.fake_runner import FakeRunner, encode

GREEDY = SamplingParams(temperature=0, max_new_tokens=100)
NO_DRAFTS = SamplingParams(temperature=0, max_new_tokens=100, speculative="off")


def run_until_idle(scheduler: Scheduler, limit: int = 500) -> list:
    events: list = []
    for _ in range(limit):
        if not scheduler.has_work():
            return events
        events += scheduler.step()
    raise AssertionError("scheduler never became idle")


def text_of(events: list, chat_id: str) -> str:
    return "".join(e.text for e in events if isinstance(e, Token) and e.chat_id == chat_id)


def finished(events: list, chat_id: str) -> TurnFinished:
    return next(e for e in events if isinstance(e, TurnFinished) and e.chat_id == chat_id)


def test_admission_waits_for_a_free_slot_and_serves_a_third_chat() -> None:
    runner = FakeRunner({"a": "one", "b": "two", "c": "three"}, slots=2)
    scheduler = Scheduler(runner)
    for chat in "abc":
        scheduler.submit(chat, encode(f"{chat}>"), GREEDY)
    first = scheduler.step()
    assert [e.chat_id for e in first if isinstance(e, TurnStarted)] == ["a", "b"]
    assert [s.chat_id for s in scheduler.waiting] == ["c"]
    events = first + run_until_idle(scheduler)
    assert {c: text_of(events, c) for c in "abc"} == {"a": "one", "b": "two", "c": "three"}
    assert all(finished(events, c).reason == "stop" for c in "abc")


def test_prompt_chunks_share_a_step_with_decode_tokens() -> None:
    runner = FakeRunner({"a": "abcdefgh", "x" * 20: "y"}, slots=2, batch_tokens=8)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), NO_DRAFTS)  # drafts beside prompts: test_speculative_scheduler.py
    scheduler.step()  # a's prompt, first token sampled
    scheduler.submit("long", encode("x" * 20 + ">"), GREEDY)
    scheduler.step()
    last = runner.steps[-1]
    assert last[0] == (0, 1, True), "the generating chat feeds one token and samples"
    assert last[1] == (1, 7, False), "the prompt fills the rest of the budget without sampling"
    events = run_until_idle(scheduler)
    assert text_of(events, "long") == "y"
    assert max(sum(n for _, n, _ in step) for step in runner.steps) <= 8


def test_second_turn_reuses_the_slot_cache() -> None:
    runner = FakeRunner({"hi": "hello", "more": "sure"}, slots=2)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("hi>"), GREEDY)
    events = run_until_idle(scheduler)
    assert text_of(events, "a") == "hello"
    second_prompt = encode("hi>hello|more>")
    scheduler.submit("a", second_prompt, GREEDY)
    events = run_until_idle(scheduler)
    started = next(e for e in events if isinstance(e, TurnStarted))
    assert started.reused_tokens == len("hi>hello")  # the EOS was sampled, never fed
    assert text_of(events, "a") == "sure"
    assert finished(events, "a").stats.reused_tokens == len("hi>hello")


def test_least_recently_used_idle_slot_is_taken_and_its_chat_reprefills() -> None:
    runner = FakeRunner({"a": "1", "b": "2", "c": "3"}, slots=2)
    scheduler = Scheduler(runner)
    for chat in "ab":
        scheduler.submit(chat, encode(f"{chat}>"), GREEDY)
        run_until_idle(scheduler)
    scheduler.submit("c", encode("c>"), GREEDY)
    events = run_until_idle(scheduler)
    assert text_of(events, "c") == "3"
    assert {s.chat_id for s in scheduler.slots} == {"b", "c"}, "a was least recently used"
    scheduler.submit("a", encode("a>1|a>"), GREEDY)
    events = run_until_idle(scheduler)
    assert next(e for e in events if isinstance(e, TurnStarted)).reused_tokens == 0
    assert text_of(events, "a") == "1"


def test_cancel_takes_effect_before_the_next_step_and_frees_the_slot() -> None:
    runner = FakeRunner({"a": "a long answer", "b": "b"}, slots=1)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), GREEDY)
    scheduler.step()
    scheduler.step()
    steps_before = len(runner.steps)
    events = scheduler.cancel("a")
    assert finished(events, "a").reason == "cancelled"
    assert finished(events, "a").stats.generated_tokens == 2
    assert scheduler.slots_busy() == 0
    scheduler.submit("b", encode("b>"), GREEDY)
    events = run_until_idle(scheduler)
    assert text_of(events, "b") == "b"
    assert runner.kv[0][:2] == encode("b>"), "a's cache was dropped when b took the slot"
    assert len(runner.steps) - steps_before == 2, "b: one prompt step and one step for its EOS"


def test_stop_string_split_across_tokens_is_held_back_and_never_shown() -> None:
    runner = FakeRunner({"q": "say STxSTOP more"}, slots=1)
    scheduler = Scheduler(runner)
    params = SamplingParams(temperature=0, max_new_tokens=100, stop=("STOP",))
    scheduler.submit("q", encode("q>"), params)
    events = run_until_idle(scheduler)
    tokens = [e.text for e in events if isinstance(e, Token)]
    assert "".join(tokens) == "say STx"
    assert finished(events, "q").reason == "stop"
    assert finished(events, "q").text == "say STx"
    assert tokens[-1] == "STx", "'ST' was held back until 'x' showed it was no stop string"


def test_max_new_tokens_and_prompt_longer_than_context() -> None:
    runner = FakeRunner({"a": "abcdefgh"}, slots=1, context_length=16)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), SamplingParams(temperature=0, max_new_tokens=3))
    events = run_until_idle(scheduler)
    assert text_of(events, "a") == "abc" and finished(events, "a").reason == "length"
    events = scheduler.submit("b", encode("x" * 40), GREEDY)
    assert finished(events, "b").reason == "error"
    assert "40 tokens" in finished(events, "b").message and "16" in finished(events, "b").message


def test_context_full_ends_the_answer_with_a_message() -> None:
    runner = FakeRunner({"a": "abcdefghijklmnopqrstuvwxyz"}, slots=1, context_length=10)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), GREEDY)
    events = run_until_idle(scheduler)
    end = finished(events, "a")
    assert end.reason == "context_full" and "context is full" in end.message
    assert text_of(events, "a") == "abcdefgh"


def test_cache_that_cannot_drop_a_tail_is_rebuilt_from_scratch() -> None:
    runner = FakeRunner({"hi": "hello", "more": "sure"}, slots=1, can_remove=False)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("hi>"), GREEDY)
    run_until_idle(scheduler)
    scheduler.submit("a", encode("hi>hellX|more>"), GREEDY)  # differs inside the cache
    events = run_until_idle(scheduler)
    assert next(e for e in events if isinstance(e, TurnStarted)).reused_tokens == 0
    assert text_of(events, "a") == "sure"


def test_close_forgets_the_chat_cache() -> None:
    runner = FakeRunner({"a": "x"}, slots=1)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), GREEDY)
    scheduler.step()
    events = scheduler.close("a")
    assert finished(events, "a").reason == "cancelled"
    assert scheduler.slots[0].chat_id is None and runner.kv[0] == []


def test_chats_opening_alike_compute_the_shared_start_once() -> None:
    system = "You are a helpful assistant. "  # 29 tokens, shared by both chats
    runner = FakeRunner({f"{system}a": "x", f"{system}b": "y"}, slots=2, batch_tokens=64)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode(f"{system}a>"), GREEDY)
    scheduler.submit("b", encode(f"{system}b>"), GREEDY)
    events = run_until_idle(scheduler)
    assert text_of(events, "a") == "x" and text_of(events, "b") == "y"
    started_b = next(e for e in events if isinstance(e, TurnStarted) and e.chat_id == "b")
    assert started_b.reused_tokens == len(system)
    assert runner.copies == [(0, 1, len(system))]
    prompt_tokens_fed = sum(n for step in runner.steps for _, n, _ in step)
    assert prompt_tokens_fed == len(system) + 2 + 2 + 2, "the system prompt was computed once"


def test_a_backend_that_cannot_copy_a_prefix_keeps_the_chats_own_cache() -> None:
    system = "You are a helpful assistant. "
    runner = FakeRunner({"You are": "x", f"{system}b": "y", f"{system}a": "z"}, slots=2, can_copy=False)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("You are>"), GREEDY)
    run_until_idle(scheduler)
    scheduler.submit("b", encode(f"{system}b>"), GREEDY)
    run_until_idle(scheduler)
    scheduler.submit("a", encode(f"{system}a>"), GREEDY)  # b's slot holds 29 of these tokens, a's own 7
    events = run_until_idle(scheduler)
    assert next(e for e in events if isinstance(e, TurnStarted)).reused_tokens == len("You are")
    assert text_of(events, "a") == "z" and runner.copies == []


def test_a_fallback_templates_markers_end_the_answer_and_never_show() -> None:
    markers = ("<|im_end|>", "<|im_start|>")
    reply = "Paris.<|im_end|>\n<|im_start|>user\nAnd Spain?"  # a base model writes the next turn as text
    runner = FakeRunner({"a": reply, "b": "Rome<|im_start|>user"}, slots=2, end_markers=markers)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), GREEDY)
    scheduler.submit("b", encode("b>"), SamplingParams(temperature=0, max_new_tokens=100, stop=("me",)))
    events = run_until_idle(scheduler)
    assert (text_of(events, "a"), finished(events, "a").reason) == ("Paris.", "stop")
    assert finished(events, "a").stats.generated_tokens == len("Paris.<|im_end|>")
    assert (text_of(events, "b"), finished(events, "b").reason) == ("Ro", "stop")  # its own stops still count
    scheduler.submit("c", encode("c>"), SamplingParams(temperature=0, ignore_eos=True))
    assert scheduler.waiting[-1].params.stop == (), "the benchmark's ignore_eos runs on, as past an end token"


def test_half_an_end_marker_is_dropped_when_the_answer_stops_at_its_token_limit() -> None:
    """A base model's answer cut at max tokens in the middle of the fallback's next-turn marker: that half marker
    was held back (it could have become the marker) and is dropped, not shown; half a stop string the user asked
    for is the answer's own text and is shown."""
    from engine.chat_template import FALLBACK_END_MARKERS

    cut = "next level?\n<|im_start"
    runner = FakeRunner({"a": cut + "|>user", "b": "okEN"}, slots=2, end_markers=FALLBACK_END_MARKERS)
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), SamplingParams(temperature=0, max_new_tokens=len(cut), speculative="off"))
    scheduler.submit("b", encode("b>"), SamplingParams(temperature=0, max_new_tokens=4, stop=("END",),
                                                       speculative="off"))
    events = run_until_idle(scheduler)
    assert (text_of(events, "a"), finished(events, "a").reason) == ("next level?\n", "length")
    assert finished(events, "a").text == "next level?\n" and finished(events, "a").stats.generated_tokens == len(cut)
    assert (text_of(events, "b"), finished(events, "b").text) == ("okEN", "okEN")


def test_a_full_cache_fails_the_step_once_and_never_feeds_its_tokens_twice() -> None:
    """The runner takes a step's tokens into its cache record and penalty history (and the prompt copy) before
    llama_decode says the cache is full. Feeding the same step again would apply them twice: the turns of that
    step end with the runner's message instead, their caches are given up, and the next turn reads its prompt
    again from the start."""
    from engine.runners.base import CacheFull

    class FullOnce(FakeRunner):
        def __init__(self) -> None:
            super().__init__({"a": "one", "b": "two"}, slots=2)
            self.applied: list[tuple[int, int, tuple[int, ...]]] = []  # (slot, start, tokens) per forward
            self.full = True

        def forward(self, work):  # type: ignore[no-untyped-def]
            self.applied += [(item.slot, item.start_pos, tuple(item.fed)) for item in work]
            if self.full:
                self.full = False
                raise CacheFull("This chat's cache has no room for this step.")
            return super().forward(work)

    runner = FullOnce()
    scheduler = Scheduler(runner)
    scheduler.submit("a", encode("a>"), NO_DRAFTS)
    scheduler.submit("b", encode("b>"), NO_DRAFTS)
    events = scheduler.step()
    assert len(runner.applied) == len(set(runner.applied)) == 2, "a step's tokens were fed twice"
    assert {finished(events, chat).reason for chat in "ab"} == {"error"}
    assert finished(events, "a").message == "This chat's cache has no room for this step."
    assert all(slot.chat_id is None and slot.cached == [] for slot in scheduler.slots)
    scheduler.submit("a", encode("a>"), NO_DRAFTS)
    events = run_until_idle(scheduler)
    assert text_of(events, "a") == "one" and finished(events, "a").reason == "stop"
    assert runner.applied[2] == (0, 0, tuple(encode("a>")))  # read again from position 0

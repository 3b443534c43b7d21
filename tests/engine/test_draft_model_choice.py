"""A draft model as a source of drafts in the scheduler (engine/speculative.py, source "draft";
scheduling/plan.py), with the scripted runner and a scripted draft model: one call drafts for every chat of a
step, the answer is the same, and a draft model that is never right is backed off."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.protocol import SamplingParams
from engine.runners.base import RunnerError
from engine.speculative import draft_lengths
from tests.engine.fake_runner import FakeRunner, encode
from tests.engine.test_scheduler import text_of
from tests.engine.test_speculative_scheduler import serve

GREEDY = SamplingParams(temperature=0, max_new_tokens=200, speculative="auto")
OFF = SamplingParams(temperature=0, max_new_tokens=200, speculative="off")
# Answers that their prompts do not contain: prompt lookup has little to go on, a draft model that knows them does.
REPLIES = {"a": "seven quick zebras jump over forty lazy dogs while humming a tune",
           "b": "pack my box with five dozen liquor jugs, then hop over the wall"}
WRONG = ord("#")  # a token no answer has


class ScriptedDrafter:
    """A draft model stand-in: each chat's next tokens as the scripted runner will answer them (`right`), or
    a token it never answers; it records each call's (slot, tokens asked for)."""

    def __init__(self, runner: FakeRunner, right: bool, size_ratio: float = 0.1) -> None:
        self.runner, self.right = runner, right
        self.size_ratio = size_ratio
        self.seconds_per_token: float | None = None
        self.calls: list[list[tuple[int, int]]] = []
        self.reads: list[tuple[int, list[int]]] = []  # (slot, tokens) the model read as a prompt

    def read(self, slot: int, tokens: Sequence[int]) -> None:
        self.reads.append((slot, list(tokens)))

    def draft(self, wants: Sequence[tuple[int, Sequence[int], int]], is_end: Callable[[int], bool]) -> list[list[int]]:
        self.calls.append([(slot, count) for slot, _, count in wants])
        drafts = []
        for _, tokens, count in wants:
            context, guess = list(tokens), []
            for _ in range(count):
                token = self.runner._next(context) if self.right else WRONG
                guess.append(token)
                context.append(token)
            drafts.append(guess)
        return drafts


def sources(sequence) -> dict[str, tuple[int, int]]:  # type: ignore[no-untyped-def]
    return dict(sequence.speculator.by_source)


def test_every_chat_of_a_step_gets_its_draft_from_one_call_and_the_answers_stay_the_same() -> None:
    plain = FakeRunner(REPLIES, slots=2)
    events_off, _, _ = serve(plain, {"a": "a>", "b": "b>"}, OFF, cost=0.05)
    runner = FakeRunner(REPLIES, slots=2)
    drafter = ScriptedDrafter(runner, right=True)
    runner.drafter = drafter
    events, sequences, _ = serve(runner, {"a": "a>", "b": "b>"}, GREEDY, cost=0.05)
    for chat in ("a", "b"):
        assert text_of(events, chat) == text_of(events_off, chat) == REPLIES[chat]
        drafted, accepted = sources(sequences[chat])["draft"]
        assert accepted == drafted >= 30, "a right draft model's tokens are all accepted"
    assert len(drafter.calls) <= len(runner.steps), "at most one draft model call a step"
    assert any({slot for slot, _ in call} == {0, 1} for call in drafter.calls), "both chats drafted in one call"
    assert len(runner.steps) < len(plain.steps) * 0.5
    assert sorted(drafter.reads) == [(0, encode("a>")), (1, encode("b>"))], "each prompt read as the model read it"


def test_a_draft_model_never_right_is_backed_off_and_changes_nothing() -> None:
    plain = FakeRunner(REPLIES, slots=1)
    events_off, _, _ = serve(plain, {"a": "a>"}, OFF, cost=0.05)
    runner = FakeRunner(REPLIES, slots=1)
    drafter = ScriptedDrafter(runner, right=False)
    runner.drafter = drafter
    events, sequences, _ = serve(runner, {"a": "a>"}, GREEDY, cost=0.05)
    assert text_of(events, "a") == text_of(events_off, "a")
    drafted, accepted = sources(sequences["a"]).get("draft", (0, 0))
    assert accepted == 0
    answer = len(REPLIES["a"])
    # a few misses bring its odds under the cost; then one-token probes after pauses of 4, 16, 64 ... steps
    assert 1 <= drafted <= answer // 8, drafted
    assert sum(count for call in drafter.calls for _, count in call) == drafted, "paused: it is not even asked"
    # a wrong draft rides in the step it was made for (prompt lookup's right guesses saved a few steps)
    assert len(runner.steps) <= len(plain.steps)
    assert answer == len(sequences["a"].output)


def test_prompt_lookup_keeps_its_guesses_where_the_draft_model_has_done_no_better() -> None:
    quote = "the lighthouse keeper climbed the stairs and lit the lamp"
    runner = FakeRunner({quote: quote}, slots=1)
    runner.drafter = ScriptedDrafter(runner, right=False)
    events, sequences, _ = serve(runner, {"q": f"{quote}>"}, GREEDY, cost=0.05)
    assert text_of(events, "q") == quote
    by_source = sources(sequences["q"])
    assert by_source["lookup"][1] >= len(quote) // 2, "the copied answer came mostly from lookup's drafts"
    assert by_source.get("draft", (0, 0))[0] <= 5


def test_a_draft_model_as_slow_as_the_model_is_not_even_asked() -> None:
    plain = FakeRunner(REPLIES, slots=1)
    events_off, _, _ = serve(plain, {"a": "a>"}, OFF, cost=0.2)
    runner = FakeRunner(REPLIES, slots=1)
    drafter = ScriptedDrafter(runner, right=True, size_ratio=1.0)  # each of its tokens takes a generated token's time
    runner.drafter = drafter
    events, _, _ = serve(runner, {"a": "a>"}, GREEDY, cost=0.2)
    assert text_of(events, "a") == text_of(events_off, "a")
    assert drafter.calls == [], "even a guess always right would cost more than it saves"
    assert drafter.reads == [], "nor does it read the prompts it will never draft after"


class FailingDrafter(ScriptedDrafter):
    def read(self, slot: int, tokens: Sequence[int]) -> None:
        raise RunnerError("the draft model's cache is full")

    def draft(self, wants: Sequence[tuple[int, Sequence[int], int]], is_end: Callable[[int], bool]) -> list[list[int]]:
        self.calls.append([(slot, count) for slot, _, count in wants])
        raise RunnerError("the draft model's cache is full")


def test_a_failing_draft_model_costs_its_guesses_not_the_answer() -> None:
    runner = FakeRunner(REPLIES, slots=1)
    drafter = FailingDrafter(runner, right=True)
    runner.drafter = drafter
    events, sequences, _ = serve(runner, {"a": "a>"}, GREEDY, cost=0.05)
    assert text_of(events, "a") == REPLIES["a"]
    assert drafter.calls and "draft" not in sources(sequences["a"]), "asked, but nothing drafted, nothing counted"


def test_what_the_draft_model_costs_shortens_its_drafts() -> None:
    free, costly = draft_lengths([0.9], [8], 0.1, [0.0]), draft_lengths([0.9], [8], 0.1, [0.5])
    assert free[0] > costly[0] > 0
    assert draft_lengths([0.9], [8], 0.1, [2.0]) == [0], "a draft model slower than the model never pays"
    # two chats, one asking the draft model: the free source's guesses go first
    lookup, model = draft_lengths([0.8, 0.8], [8, 8], 0.2, [0.0, 0.6])
    assert lookup > model


def test_the_scripted_runner_answers_what_the_draft_stand_in_guesses() -> None:
    runner = FakeRunner(REPLIES, slots=1)
    drafter = ScriptedDrafter(runner, right=True)
    assert drafter.draft([(0, encode("a>"), 5)], lambda token: False) == [encode(REPLIES["a"][:5])]

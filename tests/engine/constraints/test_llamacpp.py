"""Constrained decoding and log-probabilities in the llama.cpp runner, on the real default model.

Nothing here rests on what the model would answer: answers are checked against their schema, logits
against logits, and drafts against what the constraint allows.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Iterator

import numpy as np
import pytest

from engine.protocol import ChatMessage, Constraint, ModelConfig, SamplingParams, TurnFinished
from engine.runners.base import SlotWork
from engine.runners.llamacpp.runner import LlamaCppRunner
from engine.scheduler import Scheduler
from tests.engine.constraints.sampling import SAMPLES, SLOTS, sample_answers, schema_constraint
from tests.engine.constraints.schemas import SCHEMAS, errors, prompt_text

# 80 sampled answers (sampling.py says why that many): about 25 s alone on 2 cores, several minutes on a
# machine shared with other test runs
pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_new_tokens=64)
DIGITS = Constraint("regex", "[0-9]{6}")
# One token allowed at each step (this model spells numbers digit by digit): what the runner keeps of a
# draft then depends on the masks alone, never on which of two digits the model likes a little better.
LITERAL = Constraint("regex", "314159")
# The free chats' rows of a step with and without a constrained fourth chat in the batch: each chat
# has its own cache stream, so its row should not move at all; 1e-3 allows for a kernel that sums a
# batch of four in another order than a batch of three (logits here are 10-30 in size).
BATCH_TOLERANCE = 1e-3


@pytest.fixture(scope="module")
def runner(default_model: str) -> Iterator[LlamaCppRunner]:
    config = ModelConfig(path=default_model, slots=SLOTS, context_length=448, batch_tokens=512, prompt_copy="off")
    loaded = LlamaCppRunner.load(config, lambda fraction, message: None, lambda: False)
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def answers(runner: LlamaCppRunner) -> dict[str, list[TurnFinished]]:
    return sample_answers(runner, prompt_text)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_sampled_answer_matches_its_schema(answers: dict[str, list[TurnFinished]], name: str) -> None:
    finished = answers[name]
    assert len(finished) == SAMPLES
    assert [f.reason for f in finished] == ["stop"] * SAMPLES, [f.message or f.text for f in finished]
    assert [error for f in finished for error in errors(name, f.text)] == []


def _tokens(runner: LlamaCppRunner, question: str) -> list[int]:
    return runner.tokenize(runner.render_chat([ChatMessage("user", question)]))


def _start(runner: LlamaCppRunner, slot: int, params: SamplingParams) -> None:
    runner.clear_slot(slot)
    runner.begin_turn(slot, params)


def test_free_chats_logits_are_the_same_beside_a_constrained_chat(runner: LlamaCppRunner) -> None:
    prompts = [_tokens(runner, q) for q in ("Tell me about the sea.", "What is 2 + 2?", "Name three colours.")]
    alone, fed = _steps(runner, prompts, None, forced=None)
    beside, _ = _steps(runner, prompts, _tokens(runner, "Describe a person in JSON."), forced=fed)
    for step, (rows_alone, rows_beside) in enumerate(zip(alone, beside)):
        for slot in range(len(prompts)):
            gap = float(np.max(np.abs(rows_alone[slot] - rows_beside[slot])))
            assert gap <= BATCH_TOLERANCE, f"step {step}, chat {slot}: logits moved by {gap}"


def _steps(runner: LlamaCppRunner, prompts: list[list[int]], constrained: list[int] | None,
           forced: list[list[int]] | None, count: int = 8) -> tuple[list[list[np.ndarray]], list[list[int]]]:
    """`count` steps of the free chats (slots 0..2, teacher-forced where `forced` is given), and of a
    chat under a JSON Schema in slot 3 beside them; each step's logits of the free chats."""
    for slot in range(len(prompts)):
        _start(runner, slot, GREEDY)
    work = [SlotWork(slot, tokens, 0, True) for slot, tokens in enumerate(prompts)]
    if constrained is not None:
        _start(runner, 3, replace(GREEDY, temperature=1.0, seed=1, constraint=schema_constraint("person")))
        work.append(SlotWork(3, constrained, 0, True))
    rows: list[list[np.ndarray]] = []
    fed: list[list[int]] = [[] for _ in prompts]
    for step in range(count):
        sampled = runner.forward(work)
        rows.append([runner.last_logits(slot) for slot in range(len(prompts))])
        next_work = []
        for item in work:
            token = forced[item.slot][step] if forced is not None and item.slot < len(prompts) else sampled[item.slot][0]
            if item.slot < len(prompts):
                fed[item.slot].append(token)
            next_work.append(SlotWork(item.slot, [token], item.start_pos + len(item.tokens), True))
        work = next_work
    return rows, fed


def _greedy(runner: LlamaCppRunner, prompt: list[int], constraint: Constraint) -> list[int]:
    _start(runner, 0, replace(GREEDY, constraint=constraint))
    tokens, position, work = [], 0, SlotWork(0, prompt, 0, True)
    for _ in range(12):
        (token,) = runner.forward([work])[0]
        tokens.append(token)
        if runner.is_end_of_generation(token):
            return tokens
        position += len(work.tokens)
        work = SlotWork(0, [token], position, True)
    raise AssertionError(f"the constraint never ended the turn: {tokens}")


def test_drafts_the_constraint_forbids_are_rejected_and_the_rest_is_exact(runner: LlamaCppRunner) -> None:
    prompt = _tokens(runner, "Write a word.")
    answer = _greedy(runner, prompt, DIGITS)
    digits = b"".join(runner._piece(token) for token in answer[:-1])
    assert digits.isdigit() and len(digits) == 6, "the regex held"
    assert runner.is_end_of_generation(answer[-1]), "a finished constraint ends the turn"
    # Drafts are checked under LITERAL: each row's mask must be the one after the draft tokens before it
    # (a row given the first row's mask, or the next row's, refuses a right draft token).
    expected = _greedy(runner, prompt, LITERAL)
    assert b"".join(runner._piece(token) for token in expected[:-1]) == b"314159"
    assert len(expected) == 7 and runner.is_end_of_generation(expected[-1])
    word = _tokens(runner, "hello")[-1]
    for draft, kept in (([word], 0), (expected[1:3] + [word], 2), (expected[1:-1], len(expected) - 2)):
        _start(runner, 0, replace(GREEDY, constraint=LITERAL))
        (first,) = runner.forward([SlotWork(0, prompt, 0, True)])[0]
        new = runner.forward([SlotWork(0, [first], len(prompt), True, draft)])[0]
        assert new == expected[1: kept + 2], f"draft {draft}: {kept} accepted, then the constraint's own token"


def test_greedy_chats_take_the_tokens_their_schema_forces_in_one_step_and_stay_valid(
        runner: LlamaCppRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four greedy chats at once through the scheduler: what the schema forces (a key with its quotes and colon)
    is fed as a draft (constraints/forced.py), cut to one length beside the other chats (plan._even), and the
    row after a cut draft is masked for its own position: every answer ends by itself and validates, in fewer
    steps than tokens."""
    monkeypatch.setattr(runner._rows.constraints.overlap, "threads", lambda threads: threads)
    monkeypatch.setattr("engine.runners.llamacpp.rows.spare_core", lambda threads: False)  # masks after the pass
    drafts: list[list[int]] = []
    forward = runner.forward
    monkeypatch.setattr(runner, "forward", lambda work: drafts.append([len(w.draft) for w in work]) or forward(work))
    for slot in range(runner.slots):
        runner.clear_slot(slot)
    scheduler = Scheduler(runner)
    names = ["nested", "person", "refs", "any_of"]  # four schemas: the chats' forced runs come at different steps
    for name in names:
        params = replace(GREEDY, max_new_tokens=96, constraint=schema_constraint(name), speculative="off")
        assert not scheduler.submit(name, _tokens(runner, prompt_text(name)), params)
    finished: dict[str, TurnFinished] = {}
    while scheduler.has_work():
        finished |= {event.chat_id: event for event in scheduler.step() if isinstance(event, TurnFinished)}
    assert [finished[name].reason for name in names] == ["stop"] * 4, [f.text for f in finished.values()]
    assert [error for name in names for error in errors(name, finished[name].text)] == []
    lengths = {n for step in drafts for n in step if n}
    assert lengths and sum(f.stats.generated_tokens for f in finished.values()) > len(drafts) + 4 * 8
    assert all(f.stats.drafted_tokens == 0 for f in finished.values()), "drafting off: every draft was forced"


def _forced_answer(runner: LlamaCppRunner, monkeypatch: pytest.MonkeyPatch, params: SamplingParams,
                   known: bool, beside: bool = False) -> tuple[str, list[tuple[int, int]]]:
    """One chat under `params` through the scheduler, forced tokens fed as drafts, its masks filled after the
    pass or (`beside`) on the mask thread, which must never be handed a forced draft's rows; its text, and per
    forced step (rows fed after the chat's token, rows with logits)."""
    with monkeypatch.context() as patch:
        if not known:  # every row's logits, and every row sampled from them through the mask
            patch.setattr(runner._rows, "known", lambda item: False)
            patch.setattr(runner._rows.constraints, "forced_at", lambda slot, offset: None)
        patch.setattr(runner._rows.constraints.overlap, "threads", lambda threads: threads)
        patch.setattr("engine.runners.llamacpp.rows.spare_core", lambda threads: beside)
        fill = runner._rows.constraints._fill
        handed: list[list[int]] = []
        patch.setattr(runner._rows.constraints, "_fill",
                      lambda jobs: handed.extend(draft for _, _, draft in jobs) or fill(jobs))
        steps: list[tuple[int, int]] = []
        forward = runner.forward

        def counted(work: list[SlotWork]) -> dict[int, list[int]]:
            result = forward(work)
            flags = runner._batch.logits
            if work[0].forced:
                steps.append((len(work[0].draft), sum(flags[row] for row in range(runner._batch.n_tokens))))
            return result
        patch.setattr(runner, "forward", counted)
        runner.clear_slot(0)
        scheduler = Scheduler(runner)
        assert not scheduler.submit("person", _tokens(runner, prompt_text("person")), params)
        finished: list[TurnFinished] = []
        while scheduler.has_work():
            finished += [event for event in scheduler.step() if isinstance(event, TurnFinished)]
    (turn,) = finished
    assert turn.reason == "stop" and errors("person", turn.text) == [], turn.text
    assert bool(handed) == beside, "beside the pass, the free rows' masks go to the mask thread"
    assert not any(handed), "speculation off: every draft was forced, and none went to the mask thread"
    assert turn.stats.forced_tokens == sum(fed for fed, _ in steps) and turn.stats.drafted_tokens == 0
    return turn.text, steps


@pytest.mark.parametrize("chain", ["greedy", "penalized", "sampled"])
def test_forced_rows_have_no_logits_and_the_answer_is_the_same(
        runner: LlamaCppRunner, monkeypatch: pytest.MonkeyPatch, chain: str) -> None:
    """A chat's forced draft rows are its forced tokens without a look at the logits (rows.known), so llama.cpp
    computes the output layer for the step's last row alone: the answer is the one with logits on every row.
    A chain with a penalty history or a random state draws each forced token from itself alone
    (sampling.draw_alone), so that a seeded answer goes on as it would have: the same text."""
    params = replace(GREEDY, max_new_tokens=96, constraint=schema_constraint("person"), speculative="off")
    if chain == "penalized":
        params = replace(params, repeat_penalty=1.3, presence_penalty=0.5)
    elif chain == "sampled":
        params = replace(params, temperature=1.0, seed=11)
    text, steps = _forced_answer(runner, monkeypatch, params, known=True)
    assert steps and all(logits == 1 for _, logits in steps), steps
    assert len(steps) >= 2 and sum(fed for fed, _ in steps) >= 4
    every_text, every_steps = _forced_answer(runner, monkeypatch, params, known=False)
    assert every_text == text
    assert [logits for _, logits in every_steps] == [fed + 1 for fed, _ in every_steps]
    assert _forced_answer(runner, monkeypatch, params, known=True, beside=True)[0] == text


def test_logprobs_are_the_models_own_before_the_mask(runner: LlamaCppRunner) -> None:
    prompt = _tokens(runner, "Write a number.")
    _start(runner, 0, replace(GREEDY, logprobs=5))
    (free,) = runner.forward([SlotWork(0, prompt, 0, True)])[0]
    logits = runner.last_logits(0).astype(np.float64)
    log_softmax = logits - (logits.max() + math.log(np.exp(logits - logits.max()).sum()))
    (entry,) = runner.step_logprobs(0)
    assert entry.logprob == pytest.approx(log_softmax[free], abs=1e-4) and entry.logprob <= 0.0
    assert bytes(entry.token_bytes) == runner._piece(free) and entry.token == runner._piece(free).decode()
    assert len(entry.top) == 5 and [lp for _, lp in entry.top] == sorted((lp for _, lp in entry.top), reverse=True)
    assert entry.top[0] == (entry.token, entry.logprob), "greedy picks the likeliest"
    assert sum(math.exp(lp) for _, lp in entry.top) <= 1.0 + 1e-6

    _start(runner, 0, replace(GREEDY, logprobs=5, constraint=DIGITS))
    (digit,) = runner.forward([SlotWork(0, prompt, 0, True)])[0]
    (constrained,) = runner.step_logprobs(0)
    assert runner._piece(digit).isdigit()
    assert constrained.logprob == pytest.approx(log_softmax[digit], abs=1e-4), "the model's, not the mask's"
    assert [t for t, _ in constrained.top] == [t for t, _ in entry.top]

    _start(runner, 0, replace(GREEDY, logprobs=0))
    runner.forward([SlotWork(0, prompt, 0, True)])
    assert [e.top for e in runner.step_logprobs(0)] == [()]


@pytest.mark.parametrize("drafted", [False, True], ids=["plain", "drafted"])
def test_greedy_answers_are_the_same_with_the_masks_beside_the_pass_and_before_it(
        runner: LlamaCppRunner, monkeypatch: pytest.MonkeyPatch, drafted: bool) -> None:
    """Beside the pass the masks fill on the mask thread (a draft's rows all at once, and the additive
    rows too); after it, on the engine thread, a row when sampling reaches it, and only where the
    matcher refuses the best tokens (SlotConstraints.best). The same batches on the same threads in
    both, and the same again through llama.cpp's greedy sampler on the fully masked row: the answers
    must agree token for token."""
    prompt = _tokens(runner, "Describe a person in JSON.")
    constraint = schema_constraint("person")
    monkeypatch.setattr(runner._rows.constraints.overlap, "threads", lambda threads: threads)
    reference = _schema_answer(runner, prompt, constraint, [])
    assert len(reference) >= 8, "long enough to hold several masked steps"
    wrong = _tokens(runner, "hello")[-1]
    # two tokens of the reference answer, then one it never writes there: some drafts are taken, some not
    guide = reference if drafted else []
    answers = {}
    for beside in (True, False):
        monkeypatch.setattr("engine.runners.llamacpp.rows.spare_core", lambda threads, beside=beside: beside)
        answers[beside] = _schema_answer(runner, prompt, constraint, guide, wrong)
    monkeypatch.setattr(runner._rows, "_argmax", _Never())  # every row masked, then llama_sampler_sample
    assert answers[True] == answers[False] == _schema_answer(runner, prompt, constraint, guide, wrong)
    text = b"".join(runner._piece(token) for token in answers[True] if not runner.is_end_of_generation(token))
    assert errors("person", text.decode()) == [] or not runner.is_end_of_generation(answers[True][-1])


class _Never(set):  # type: ignore[type-arg]
    """A runner's set of argmax slots that takes none: every slot samples through its llama.cpp chain."""

    def add(self, item: object) -> None:
        pass


def test_a_greedy_turn_takes_the_same_tokens_as_llama_cpps_greedy_sampler(runner: LlamaCppRunner,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A greedy chain with no penalties is read as the row's argmax in numpy (SampledRows.sample)."""
    prompt = _tokens(runner, "Tell me about the sea.")
    free = replace(GREEDY, max_new_tokens=24)
    numpy_answer = _free_answer(runner, prompt, free)
    assert 0 in runner._rows._argmax
    monkeypatch.setattr(runner._rows, "_argmax", _Never())
    assert _free_answer(runner, prompt, free) == numpy_answer
    assert len(set(numpy_answer)) >= 4, "more than one token repeated: the answers can differ"


def _free_answer(runner: LlamaCppRunner, prompt: list[int], params: SamplingParams) -> list[int]:
    _start(runner, 0, params)
    tokens: list[int] = []
    work = SlotWork(0, prompt, 0, True)
    while len(tokens) < params.max_new_tokens:
        tokens += runner.forward([work])[0]
        work = SlotWork(0, [tokens[-1]], work.start_pos + len(work.tokens), True)
    return tokens


def _schema_answer(runner: LlamaCppRunner, prompt: list[int], constraint: Constraint, guide: list[int],
                   wrong: int = 0) -> list[int]:
    """A greedy answer under `constraint`; with `guide`, each step drafts its next two tokens and `wrong`."""
    _start(runner, 0, replace(GREEDY, constraint=constraint))
    tokens: list[int] = []
    work = SlotWork(0, prompt, 0, True)
    while len(tokens) < GREEDY.max_new_tokens:
        new = runner.forward([work])[0]
        tokens += new
        if runner.is_end_of_generation(tokens[-1]):
            break
        at = len(tokens)
        start = work.start_pos + len(work.tokens) + len(new) - 1  # the new last token's position
        if work.draft:
            runner.remove_from(0, start)  # the cells of the draft tokens not taken
        draft = [*guide[at : at + 2], wrong] if guide and at + 2 <= len(guide) else []
        work = SlotWork(0, [tokens[-1]], start, True, draft)
    return tokens

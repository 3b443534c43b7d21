"""A draft model beside the llama.cpp runner (runners/llamacpp/draft_model.py), on the real default model.

Drafts: the default model requantized to Q4_0 (the same vocabulary, other weights: mostly right), a random-weight
model of the same vocabulary (never right), and two that are refused: the default model with two tokens' texts
swapped, and a random model with 256 more tokens. The answers are compared as test_speculative.py compares
prompt lookup's: with flash attention on, a batch and one token round alike, so they agree, or part only at a
near-tie of the answer without drafts.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pytest

from engine.protocol import ChatMessage, SamplingParams
from engine.randweights import gguf_model
from engine.runners.base import RunnerError
from engine.runners.llamacpp.runner import LlamaCppRunner
from engine.scheduler import Scheduler
from engine.sequence import Sequence
from engine.step_cost import StepCost
from tests.engine.quantcheck.gguf_copies import swap_two_tokens
from tests.engine.random_drafts import write_tiny_draft
from tests.engine.runners.llamacpp.test_runner import NEAR_TIE, _load
from tests.engine.runners.llamacpp.test_speculative import _choice, logits_after

GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=24, speculative="auto")
PROMPTS = ["Write a short poem about the sea.", "Explain in two sentences why the sky is blue.",
           "Count from one to ten in words."]


class CheapDrafts(StepCost):
    """A drafted token's cost pinned low, the draft model's included, so that the drafts do not depend on this
    machine's timings: whether a source is backed off is then its acceptance's doing alone."""

    def ratio(self, decoding: int) -> float:
        return 0.05

    def token_seconds(self, decoding: int) -> float | None:
        return 10.0


def load_with(model: str, draft: str) -> LlamaCppRunner:
    return _load(model, slots=2, context_length=1024, batch_tokens=256, flash_attention="on", prompt_copy="off",
                 draft_model=draft)


@pytest.fixture(scope="module")
def runner(default_model: str, requantized_model: str) -> Iterable[LlamaCppRunner]:
    loaded = load_with(default_model, requantized_model)
    yield loaded
    loaded.close()


def answer(runner: LlamaCppRunner, tokens: list[int], params: SamplingParams) -> Sequence:
    runner.clear_slot(0)
    scheduler = Scheduler(runner, CheapDrafts())
    scheduler.submit("chat", tokens, params)
    sequence = scheduler.waiting[-1]
    while scheduler.has_work():
        scheduler.step()
    return sequence


def prompt_tokens(runner: LlamaCppRunner, text: str) -> list[int]:
    return runner.tokenize(runner.render_chat([ChatMessage("user", text)]))


def parting(runner: LlamaCppRunner, tokens: list[int], plain: list[int], drafted: list[int]) -> float | None:
    """None where the two answers are the same; else the logit gap at their first difference, which must be a
    near-tie of the plain (greedy) run."""
    first = next((i for i, (a, b) in enumerate(zip(plain, drafted)) if a != b), None)
    if first is None and len(plain) == len(drafted):
        return None
    first = min(len(plain), len(drafted)) if first is None else first
    logits = logits_after(runner, tokens, plain[:first])
    assert int(np.argmax(logits)) == _choice(runner, plain, first, logits), "the plain run is greedy"
    return float(logits[_choice(runner, plain, first, logits)] - logits[_choice(runner, drafted, first, logits)])


def test_the_draft_model_is_described_and_counted(runner: LlamaCppRunner, requantized_model: str) -> None:
    assert runner.info.draft_model == Path(requantized_model).name
    assert runner.info.draft_model_bytes > Path(requantized_model).stat().st_size // 2  # its weights and its cache
    assert runner.drafter is not None and 0.7 < runner.drafter.size_ratio < 1.0, "Q4_0 is a little smaller than Q4_1"


def test_greedy_answers_with_the_draft_model_are_the_answers_without(runner: LlamaCppRunner) -> None:
    accepted = drafted = 0
    parted = []
    for text in PROMPTS:
        tokens = prompt_tokens(runner, text)
        plain = answer(runner, tokens, replace(GREEDY, speculative="off")).output
        with_draft = answer(runner, tokens, GREEDY)
        assert with_draft.speculator is not None
        counts = with_draft.speculator.by_source.get("draft", (0, 0))
        drafted, accepted = drafted + counts[0], accepted + counts[1]
        gap = parting(runner, tokens, plain, with_draft.output)
        if gap is not None:
            assert 0.0 <= gap <= NEAR_TIE, f"{text!r}: parted at a logit gap of {gap:.3f}"
            parted.append(text)
    assert len(parted) <= 1, f"answers parted more often than near-ties explain: {parted}"
    # the Q4_0 copy agrees with the model on most tokens (37 of its 47 guesses held on the Intel VM)
    assert accepted >= 12 and accepted / drafted >= 0.3, (accepted, drafted)


def test_a_seeded_sampled_answer_with_the_draft_model_is_the_one_without(runner: LlamaCppRunner) -> None:
    """Sampling draws from the model's own rows, one draw per emitted token (engine/runners/verify.py): the
    draft model only decides how many rows a step has."""
    tokens = prompt_tokens(runner, "Tell me a story about a dragon.")
    params = SamplingParams(temperature=0.9, seed=11, max_new_tokens=24, speculative="auto")
    plain = answer(runner, tokens, replace(params, speculative="off")).output
    with_draft = answer(runner, tokens, params)
    assert with_draft.speculator is not None and with_draft.speculator.by_source.get("draft", (0, 0))[1] > 0
    assert with_draft.output == plain


def test_every_drafting_chat_drafts_in_one_batched_round_per_position(
        runner: LlamaCppRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    drafter = runner.drafter
    assert drafter is not None
    monkeypatch.setattr(drafter, "min_probability", 0.0)  # every chat drafts all it is asked for
    chats = [prompt_tokens(runner, text) for text in PROMPTS[:2]]
    for slot, tokens in enumerate(chats):
        drafter.read(slot, tokens)  # as the scheduler has it read each prompt beside the model
    before = drafter.rounds
    drafts = drafter.draft([(0, chats[0], 4), (1, chats[1], 3)], runner.is_end_of_generation)
    assert [len(draft) for draft in drafts] == [4, 3]
    # one pass of both chats' last prompt token, then one of each token drafted but the last: 4, not 4 + 3
    assert drafter.rounds - before == 4
    alone = drafter.rounds
    assert drafter.draft([(1, chats[1], 3)], runner.is_end_of_generation) == drafts[1:]
    assert drafter.rounds - alone == 3, "what the first call drafted was dropped from the draft's cache"


def test_auto_backs_off_a_draft_model_that_is_never_right(default_model: str, random_draft_model: str) -> None:
    loaded = load_with(default_model, random_draft_model)
    try:
        tokens = prompt_tokens(loaded, PROMPTS[0])
        plain = answer(loaded, tokens, replace(GREEDY, speculative="off")).output
        with_draft = answer(loaded, tokens, GREEDY)
        assert with_draft.speculator is not None
        drafted, accepted = with_draft.speculator.by_source.get("draft", (0, 0))
        # nearly free drafts (CheapDrafts) are worth a few misses; then its odds fall under the cost, and its
        # pauses grow fourfold with each miss while none of its tokens has held
        assert 1 <= drafted <= 10 and accepted == 0, (drafted, accepted)
        speculator = with_draft.speculator
        assert speculator.odds["draft", 0].rate < 0.05 and speculator.pauses["draft"][1] >= 16
        gap = parting(loaded, tokens, plain, with_draft.output)
        assert gap is None or gap <= NEAR_TIE
    finally:
        loaded.close()


@pytest.mark.parametrize("kind", ["swapped", "longer"])
def test_a_draft_model_of_another_vocabulary_is_refused_with_the_reason(
        default_model: str, default_gguf_fields: Any, tmp_path: Path, kind: str) -> None:
    if kind == "swapped":
        draft = tmp_path / "swapped.gguf"
        swap_two_tokens(default_model, draft, 300, 301)  # "il" and "om"
        expected = "Token 300 is 'il' in the draft model swapped.gguf but 'om' in SmolLM2-135M-Instruct.Q4_1.gguf"
    else:
        draft = write_tiny_draft(default_model, default_gguf_fields, tmp_path / "longer.gguf", extra_tokens=256)
        vocab = gguf_model.shape_of(default_gguf_fields).vocab
        expected = f"has {vocab + 256:,} tokens and SmolLM2-135M-Instruct.Q4_1.gguf {vocab:,}"
    with pytest.raises(RunnerError) as refused:
        load_with(default_model, str(draft))
    assert expected in str(refused.value) and "draft model" in str(refused.value)

"""A draft model beside the transformers runner (runners/hf/draft_model.py), on the tiny models built in code.

The model is the tiny Llama trained to repeat its corpus; the drafts come from the same model (the same
weights: mostly right), from the random tiny Llama of the same vocabulary (rarely right), and one is refused:
a tiny Llama whose tokenizer has one more special token, which moves every later id. In fp32 the tiny models
are deterministic, so greedy answers with and without the draft model must agree token for token.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from pathlib import Path
from typing import Iterable

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.catalog.memory import estimate  # noqa: E402
from engine.catalog.memory_hf import estimate_hf  # noqa: E402
from engine.catalog.models import describe  # noqa: E402
from engine.protocol import ModelConfig, SamplingParams  # noqa: E402
from engine.runners.base import RunnerError  # noqa: E402
from engine.runners.hf.runner import HfRunner  # noqa: E402
from engine.scheduler import Scheduler  # noqa: E402
from engine.sequence import Sequence  # noqa: E402
from engine.step_cost import StepCost  # noqa: E402
from engine.tuning import DRAFT_MIN_PROBABILITY, HF_RUNTIME_BYTES  # noqa: E402
from tests.engine.runners.hf.tiny_hf import CORPUS, build_tiny_llama, prompt  # noqa: E402

pytestmark = pytest.mark.hf

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_new_tokens=32, speculative="auto")
QUESTIONS = ["What is the capital of France?", CORPUS[3], "Tell me about cats and dogs.", CORPUS[0]]


class CheapDrafts(StepCost):
    """A drafted token's cost pinned low, the draft model's included, so that the drafts do not depend on this
    machine's timings."""

    def ratio(self, decoding: int) -> float:
        return 0.05

    def token_seconds(self, decoding: int) -> float | None:
        return 10.0


def load(model: str, draft: str | None) -> HfRunner:
    config = ModelConfig(path=model, backend="hf", slots=4, context_length=256, batch_tokens=64, threads=1,
                         draft_model=draft)
    runner = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    if runner.drafter is not None:  # as large as the model: its guesses would never even be asked for (plan.py)
        assert runner.drafter.size_ratio == pytest.approx(1.0)
        runner.drafter.size_ratio = 0.05
    return runner


@pytest.fixture(scope="module")
def self_drafted(repeating_model: str) -> Iterable[HfRunner]:
    runner = load(repeating_model, repeating_model)
    yield runner
    runner.close()


def serve(runner: HfRunner, prompts: list[list[int]], params: SamplingParams) -> list[Sequence]:
    for slot in range(runner.slots):
        runner.clear_slot(slot)
    scheduler = Scheduler(runner, CheapDrafts())
    sequences = []
    for index, tokens in enumerate(prompts):
        scheduler.submit(f"chat{index}", tokens, params)
        sequences.append(scheduler.waiting[-1])
    while scheduler.has_work():
        scheduler.step()
    return sequences


def from_draft_model(sequences: list[Sequence]) -> tuple[int, int]:
    """(drafted, accepted) over the sequences' draft model source."""
    pairs = [s.speculator.by_source.get("draft", (0, 0)) for s in sequences if s.speculator is not None]
    return sum(p[0] for p in pairs), sum(p[1] for p in pairs)


def test_four_chats_drafted_by_the_same_model_answer_as_without_drafts(self_drafted: HfRunner) -> None:
    prompts = [prompt(self_drafted, question) for question in QUESTIONS]
    plain = serve(self_drafted, prompts, replace(GREEDY, speculative="off"))
    drafter = self_drafted.drafter
    assert drafter is not None and drafter.rounds == 0
    drafted = serve(self_drafted, prompts, GREEDY)
    assert [s.output for s in drafted] == [s.output for s in plain]
    made, kept = from_draft_model(drafted)
    assert made >= 10 and kept >= 0.8 * made, f"the model's own guesses are its answer ({kept} of {made})"
    info = self_drafted.info
    assert info.draft_model == Path(self_drafted.info.path).name and info.draft_model_bytes > 0


def test_a_random_draft_model_changes_no_answer(repeating_model: str, tiny_model: str) -> None:
    runner = load(repeating_model, tiny_model)
    try:
        prompts = [prompt(runner, question) for question in QUESTIONS]
        plain = serve(runner, prompts, replace(GREEDY, speculative="off"))
        drafted = serve(runner, prompts, GREEDY)
        assert [s.output for s in drafted] == [s.output for s in plain]
        made, kept = from_draft_model(drafted)
        assert made > 0 and kept < made
    finally:
        runner.close()


def test_a_draft_model_of_another_vocabulary_is_refused_with_the_reason(repeating_model: str, tmp_path: Path) -> None:
    other = build_tiny_llama(tmp_path / "think-llama", extra_special=["<think>"])  # one more special token
    with pytest.raises(RunnerError) as refused:
        load(repeating_model, str(other))
    assert "Token 3 is '<think>' in the draft model think-llama but" in str(refused.value)


def test_the_estimate_counts_the_draft_model_beside_the_model(repeating_model: str, tiny_model: str) -> None:
    config = ModelConfig(path=repeating_model, backend="hf", slots=4, context_length=256, device="cpu")
    alone = estimate(describe(repeating_model), config, has_gpu=False, total_memory=16 << 30)
    paired = estimate(describe(repeating_model), replace(config, draft_model=tiny_model), has_gpu=False,
                      total_memory=16 << 30)
    own = estimate_hf(describe(tiny_model), dataclasses.replace(config, path=tiny_model), on_gpu=False)
    # the process's runtime is paid once, and the draft's step frees its buffers before the model's step
    beside = own.total_bytes - HF_RUNTIME_BYTES - own.transient_bytes
    assert paired.draft_model_bytes == beside > 0
    assert paired.total_bytes == alone.total_bytes + beside
    assert paired.after_load_bytes == alone.after_load_bytes + own.after_load_bytes - HF_RUNTIME_BYTES


def test_several_chats_draft_in_one_step_of_the_draft_model_per_position(self_drafted: HfRunner) -> None:
    drafter = self_drafted.drafter
    assert drafter is not None
    chats = [prompt(self_drafted, text) for text in CORPUS[:3]]  # answers the model was trained to give
    drafter.min_probability = 0.0  # every chat drafts all it is asked for
    try:
        for slot in range(3):
            drafter.forget(slot)
        alone = [drafter.draft([(slot, tokens, 4)], self_drafted.is_end_of_generation)[0]
                 for slot, tokens in enumerate(chats)]
        for slot in range(3):
            drafter.forget(slot)
        rounds = drafter.rounds
        together = drafter.draft([(slot, tokens, 4) for slot, tokens in enumerate(chats)],
                                 self_drafted.is_end_of_generation)
        assert together == alone and all(len(draft) == 4 for draft in together)
        reading = -(-sum(len(tokens) for tokens in chats) // self_drafted.batch_tokens)  # the batch's chunks
        assert reading < 3 and drafter.rounds - rounds == reading + 3, "the three prompts read together, then one " \
                                                                       "step per further token for all three"
        again = drafter.draft([(0, chats[0] + together[0][:2], 2)], self_drafted.is_end_of_generation)
        assert again == [together[0][2:4]], "after two of its guesses were taken: the two after them"
    finally:
        drafter.min_probability = DRAFT_MIN_PROBABILITY

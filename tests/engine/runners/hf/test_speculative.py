"""Prompt-lookup drafts on the transformers runner: the same tokens, the same distribution, a true cache.

The tiny model built in code is deterministic in fp32, so with and without drafts must agree token
for token. `repeating_model` is the tiny model trained to answer each of its corpus sentences with
the sentence itself: a chat that copies long spans of its prompt, as an edit or a quote does.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import Iterable

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.protocol import ModelConfig, SamplingParams  # noqa: E402
from engine.runners.base import SlotWork  # noqa: E402
from engine.runners.hf.runner import HfRunner  # noqa: E402
from engine.scheduler import Scheduler  # noqa: E402
from engine.sequence import Sequence  # noqa: E402
from tests.engine.runners.hf.tiny_hf import CORPUS, fresh, prompt  # noqa: E402
from tests.engine.test_speculative_scheduler import FixedCost  # noqa: E402

pytestmark = pytest.mark.hf

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0, max_new_tokens=40, speculative="auto")
QUESTIONS = ["What is the capital of France?", CORPUS[3], "Tell me about cats and dogs.", "Once upon a time"]
# Sampling wide open (no top-k/p/min-p cut) and hot, so drafts are sometimes accepted and sometimes not.
HOT = SamplingParams(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0, repeat_penalty=1.0, max_new_tokens=4,
                     speculative="auto")
SEEDS = 300  # per side
# Two-sample chi-square, 1 in 1,000 to fail by chance: the critical value from the Wilson-Hilferty
# approximation (scipy is not a dependency); the seeds are fixed, so the test is deterministic.
Z_999 = 3.0902


@pytest.fixture(scope="module")
def runner(repeating_model: str) -> Iterable[HfRunner]:
    # One thread: the tiny model's matrices are too small to share, and waiting threads slow a busy machine.
    config = ModelConfig(path=repeating_model, backend="hf", slots=4, context_length=256, batch_tokens=64, threads=1)
    loaded = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    yield loaded
    loaded.close()


def serve(runner: HfRunner, prompts: list[list[int]], params: list[SamplingParams], cost: float = 0.1
          ) -> list[Sequence]:
    """All prompts at once through a real scheduler; the sequences, finished, with their tokens."""
    for slot in range(runner.slots):
        runner.clear_slot(slot)
    scheduler = Scheduler(runner, FixedCost(cost))
    sequences = []
    for index, (tokens, turn) in enumerate(zip(prompts, params)):
        scheduler.submit(f"chat{index}", tokens, turn)
        sequences.append(scheduler.waiting[-1])
    while scheduler.has_work():
        scheduler.step()
    return sequences


def test_four_chats_at_once_give_the_same_tokens_with_and_without_drafts(runner: HfRunner) -> None:
    prompts = [prompt(runner, question) for question in QUESTIONS]
    plain = serve(runner, prompts, [replace(GREEDY, speculative="off")] * 4)
    drafted = serve(runner, prompts, [GREEDY] * 4)
    assert [s.output for s in drafted] == [s.output for s in plain]
    copy = drafted[1]
    assert runner.tokenizer.decode(copy.output, skip_special_tokens=True) == CORPUS[3], "it repeats its prompt"
    assert copy.speculator is not None and copy.speculator.accepted >= len(copy.output) // 2
    assert sum(s.speculator.drafted - s.speculator.accepted for s in drafted if s.speculator) > 0, "some rejected"


def test_a_rejected_draft_leaves_the_cache_as_a_run_that_never_drafted(runner: HfRunner) -> None:
    tokens = prompt(runner, CORPUS[0])
    fresh(runner, 0, 1)
    first = runner.forward([SlotWork(0, tokens, 0, True), SlotWork(1, tokens, 0, True)])
    token = first[0][0]
    wrong = [token, token, token]  # never the model's choice after itself here
    new = runner.forward([SlotWork(0, [token], len(tokens), True, draft=wrong), SlotWork(1, [token], len(tokens), True)])
    assert new[0] == new[1] and len(new[0]) == 1, "the draft was rejected at once; the model's own token came"
    assert runner.remove_from(0, len(tokens) + 1)
    following = new[0][0]
    runner.forward([SlotWork(0, [following], len(tokens) + 1, True), SlotWork(1, [following], len(tokens) + 1, True)])
    np.testing.assert_allclose(runner.last_logits(0), runner.last_logits(1), rtol=0, atol=1e-5)


def test_sampled_tokens_follow_the_same_distribution_with_and_without_drafts(runner: HfRunner) -> None:
    question = prompt(runner, CORPUS[1])
    plain = _first_tokens(runner, question, replace(HOT, speculative="off"), range(SEEDS))
    drafted = _first_tokens(runner, question, HOT, range(SEEDS, 2 * SEEDS))
    accepted = sum(s.speculator.accepted for s in drafted if s.speculator)
    assert accepted > SEEDS // 2, f"drafts were accepted ({accepted}): the check below tests something"
    for position in range(HOT.max_new_tokens):
        statistic, critical = _chi_square([s.output[position] for s in plain if len(s.output) > position],
                                          [s.output[position] for s in drafted if len(s.output) > position])
        assert statistic < critical, f"token {position + 1}: chi-square {statistic:.1f} >= {critical:.1f}"


def test_a_seeded_chat_samples_the_same_tokens_with_and_without_drafts(runner: HfRunner) -> None:
    question = prompt(runner, CORPUS[4])
    params = replace(HOT, temperature=0.9, repeat_penalty=1.3, max_new_tokens=30)  # the penalty sees drafts too
    seeds = range(100, 108)
    plain = _first_tokens(runner, question, replace(params, speculative="off"), seeds)
    drafted = _first_tokens(runner, question, params, seeds)
    assert [s.output for s in drafted] == [s.output for s in plain]
    assert sum(s.speculator.accepted for s in drafted if s.speculator) >= 30


def _first_tokens(runner: HfRunner, tokens: list[int], params: SamplingParams, seeds: range) -> list[Sequence]:
    done: list[Sequence] = []
    for start in range(seeds.start, seeds.stop, runner.slots):
        batch = range(start, min(start + runner.slots, seeds.stop))
        done += serve(runner, [tokens] * len(batch), [replace(params, seed=seed) for seed in batch])
    return done


def _chi_square(first: list[int], second: list[int]) -> tuple[float, float]:
    """Homogeneity of two samples of tokens (categories too rare for the test pooled); statistic, critical value."""
    counts_a, counts_b = Counter(first), Counter(second)
    total_a, total_b = len(first), len(second)
    pooled: list[tuple[int, int]] = []
    rare_a = rare_b = 0
    for token in sorted(set(counts_a) | set(counts_b)):
        a, b = counts_a[token], counts_b[token]
        if (a + b) * min(total_a, total_b) / (total_a + total_b) < 5:
            rare_a, rare_b = rare_a + a, rare_b + b
        else:
            pooled.append((a, b))
    if rare_a + rare_b:
        pooled.append((rare_a, rare_b))
    statistic = 0.0
    for a, b in pooled:
        expected_a = (a + b) * total_a / (total_a + total_b)
        expected_b = (a + b) * total_b / (total_a + total_b)
        statistic += (a - expected_a) ** 2 / expected_a + (b - expected_b) ** 2 / expected_b
    freedom = max(1, len(pooled) - 1)
    critical = freedom * (1 - 2 / (9 * freedom) + Z_999 * math.sqrt(2 / (9 * freedom))) ** 3
    return statistic, critical


def test_drafts_right_and_wrong_leave_a_seeded_chat_sampling_what_it_would_without(tiny_model: str) -> None:
    """Each draft position is sampled with the penalty history and random state of one token per step,
    and nothing is sampled past a wrong guess."""
    config = ModelConfig(path=tiny_model, backend="hf", slots=1, context_length=256, batch_tokens=64, threads=1)
    runner = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    try:
        _guess_the_reference_ahead(runner)
    finally:
        runner.close()


def _guess_the_reference_ahead(runner: HfRunner) -> None:
    tokens = prompt(runner, "Tell me about the weather and bread.")
    params = replace(HOT, temperature=0.9, repeat_penalty=1.5, max_new_tokens=26, seed=5)
    fresh(runner, 0, params=params)
    reference, work = [], [SlotWork(0, tokens, 0, True)]
    while len(reference) < 25:  # one token per step: the plain way
        (token,) = runner.forward(work)[0]
        reference.append(token)
        work = [SlotWork(0, [token], len(tokens) + len(reference) - 1, True)]
    fresh(runner, 0, params=params)
    produced = list(runner.forward([SlotWork(0, tokens, 0, True)])[0])
    while len(produced) < 25:  # the same answer guessed ahead, 8 tokens at a time
        position = len(tokens) + len(produced) - 1
        guess = reference[len(produced) : len(produced) + 8]
        guess[4:5] = [token ^ 1 for token in guess[4:5]]  # the fifth guess wrong
        new = runner.forward([SlotWork(0, [produced[-1]], position, True, draft=guess)])[0]
        assert len(new) == min(5, len(guess) + 1) and new[:-1] == guess[: len(new) - 1]
        produced += new
        runner.remove_from(0, position + len(new))
    assert produced[:25] == reference

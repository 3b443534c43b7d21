"""Constrained decoding and log-probabilities in the transformers runner, on the tiny model built in code.

Its random weights make every walk through a schema a random one: what keeps the answers valid is
the mask alone.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Iterator

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from engine.protocol import Constraint, ModelConfig, SamplingParams, TurnFinished  # noqa: E402
from engine.runners.base import SlotWork  # noqa: E402
from engine.runners.hf.runner import HfRunner  # noqa: E402
from tests.engine.constraints.sampling import SAMPLES, SLOTS, sample_answers  # noqa: E402
from tests.engine.constraints.schemas import SCHEMAS, errors  # noqa: E402
from tests.engine.runners.hf.tiny_hf import fresh, prompt  # noqa: E402

pytestmark = [pytest.mark.hf, pytest.mark.slow]

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0)
DIGITS = Constraint("regex", "[0-9]{4}")


@pytest.fixture(scope="module")
def runner(tiny_model: str) -> Iterator[HfRunner]:
    config = ModelConfig(path=tiny_model, backend="hf", slots=SLOTS, context_length=256, batch_tokens=512, threads=1)
    loaded = HfRunner.load(config, lambda fraction, message: None, lambda: False)
    yield loaded
    loaded.close()


@pytest.fixture(scope="module")
def answers(runner: HfRunner) -> dict[str, list[TurnFinished]]:
    return sample_answers(runner, lambda name: "Answer in JSON.")


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_sampled_answer_matches_its_schema(answers: dict[str, list[TurnFinished]], name: str) -> None:
    finished = answers[name]
    assert [f.reason for f in finished] == ["stop"] * SAMPLES, [f.message or f.text for f in finished]
    assert [error for f in finished for error in errors(name, f.text)] == []


def _digit_tokens(runner: HfRunner, tokens: list[int]) -> list[int]:
    fresh(runner, 0, params=replace(GREEDY, constraint=DIGITS))
    out, work = [], SlotWork(0, tokens, 0, True)
    while not out or not runner.is_end_of_generation(out[-1]):
        (token,) = runner.forward([work])[0]
        out.append(token)
        work = SlotWork(0, [token], work.start_pos + len(work.tokens), True)
        assert len(out) <= 8, f"the constraint never ended the turn: {out}"
    return out


def test_drafts_the_constraint_forbids_are_rejected_and_the_rest_is_exact(runner: HfRunner) -> None:
    tokens = prompt(runner, "Hello")
    expected = _digit_tokens(runner, tokens)
    assert runner.tokenizer.decode(expected[:-1]).isdigit()
    letter = runner.tokenizer.convert_tokens_to_ids("a")
    for draft, kept in (([letter], 0), ([expected[1], letter], 1), (expected[1:-1], len(expected) - 2)):
        fresh(runner, 0, params=replace(GREEDY, constraint=DIGITS))
        (first,) = runner.forward([SlotWork(0, tokens, 0, True)])[0]
        new = runner.forward([SlotWork(0, [first], len(tokens), True, draft)])[0]
        assert new == expected[1: kept + 2], f"draft {draft}: {kept} accepted, then the constraint's own token"


def test_logprobs_are_the_models_own_before_the_mask(runner: HfRunner) -> None:
    tokens = prompt(runner, "Hello")
    fresh(runner, 0, params=replace(GREEDY, logprobs=3))
    (free,) = runner.forward([SlotWork(0, tokens, 0, True)])[0]
    log_softmax = torch.log_softmax(torch.from_numpy(runner.last_logits(0)).double(), dim=-1)
    (entry,) = runner.step_logprobs(0)
    assert entry.logprob == pytest.approx(float(log_softmax[free]), abs=1e-4) and entry.logprob <= 0.0
    assert entry.top[0] == (entry.token, entry.logprob) and len(entry.top) == 3
    assert [lp for _, lp in entry.top] == sorted((lp for _, lp in entry.top), reverse=True)
    assert sum(math.exp(lp) for _, lp in entry.top) <= 1.0 + 1e-6
    fresh(runner, 0, params=replace(GREEDY, logprobs=3, constraint=DIGITS))
    (digit,) = runner.forward([SlotWork(0, tokens, 0, True)])[0]
    (constrained,) = runner.step_logprobs(0)
    assert constrained.token.isdigit() and bytes(constrained.token_bytes) == constrained.token.encode()
    assert constrained.logprob == pytest.approx(float(log_softmax[digit]), abs=1e-4), "the model's, not the mask's"
    assert constrained.top == entry.top

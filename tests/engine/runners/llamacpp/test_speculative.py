"""Prompt-lookup drafts on the llama.cpp runner and the real default model.

llama.cpp's CPU kernels round differently with the batch's shape (one token, or one token and a
draft), so greedy answers with and without drafts may part where two tokens are nearly tied. Where
they do, the first difference must be at such a near-tie of the answer without drafts: its two
candidates within NEAR_TIE of each other in that run's own logits (teacher-forced one token per
step, which is that run bit for bit). NEAR_TIE is test_runner.py's margin.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

import numpy as np
import pytest

from engine.protocol import ChatMessage, SamplingParams
from engine.runners.base import SlotWork
from engine.runners.llamacpp.runner import LlamaCppRunner
from engine.scheduler import Scheduler
from engine.sequence import Sequence
from tests.engine.runners.llamacpp.test_runner import LAYOUT_TOLERANCE, NEAR_TIE, _distribution_shift, _load
from tests.engine.test_speculative_scheduler import FixedCost

GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=48, speculative="auto")  # the plain argmax
PASSAGE = ("The old lighthouse stood on the rocks at the edge of the bay. Every night the keeper climbed "
           "the stairs, lit the lamp and watched the ships pass.")
CODE = "def area(width, height):\n    return width * height\n\n\ndef perimeter(width, height):\n    return 2 * (width + height)\n"
PROMPTS = [
    f"Repeat the following text exactly, changing only 'keeper' to 'warden'.\n\n{PASSAGE}",
    f"Repeat this code exactly:\n\n```python\n{CODE}```",
    f"Rewrite this code, renaming `width` to `w`:\n\n```python\n{CODE}```",
    f"Summarise in one sentence: {PASSAGE}",
    "Write a short poem about the sea.",
    "What is the capital of France?",
    "List the days of the week, then list them again in reverse order.",
    "Count from one to twenty in words.",
]


# With flash attention on, a draft's batch and a single token round alike: 0 of 8 answers parted on
# the Intel VM. With it off (what auto picks on the CPU) ggml's matrix products for a batch of
# several tokens round differently from one token's, by up to ~0.2 logits: 3 of 8 answers parted
# there, each at a near-tie (gaps 0.02-0.16), and a seeded draw can move. Exactness is in one pass
# (each accepted token is that pass's own choice); across batch shapes only the near-tie rule holds.
@pytest.fixture(scope="module", params=["on", "auto"], ids=["flash-on", "flash-auto"])
def runner(default_model: str, request: pytest.FixtureRequest) -> Iterable[LlamaCppRunner]:
    loaded = _load(default_model, slots=2, context_length=1024, batch_tokens=256, flash_attention=request.param)
    yield loaded
    loaded.close()


def answer(runner: LlamaCppRunner, tokens: list[int], params: SamplingParams) -> Sequence:
    """One turn through a real scheduler in slot 0; drafts are cheap here, so they are tried often."""
    runner.clear_slot(0)
    scheduler = Scheduler(runner, FixedCost(0.05))
    scheduler.submit("chat", tokens, params)
    sequence = scheduler.waiting[-1]
    while scheduler.has_work():
        scheduler.step()
    return sequence


def logits_after(runner: LlamaCppRunner, tokens: list[int], generated: list[int]) -> np.ndarray:
    """The logits the plain run chose generated[-1]'s successor from: one token per step, as it ran."""
    runner.clear_slot(0)
    runner.begin_turn(0, GREEDY)
    runner.forward([SlotWork(0, tokens, 0, True)])
    for position, token in enumerate(generated, start=len(tokens)):
        runner.forward([SlotWork(0, [token], position, True)])
    return runner.last_logits(0)


def test_greedy_answers_agree_with_and_without_drafts_or_part_only_at_a_near_tie(runner: LlamaCppRunner) -> None:
    parted, accepted = [], 0
    for text in PROMPTS:
        tokens = runner.tokenize(runner.render_chat([ChatMessage("user", text)]))
        plain = answer(runner, tokens, replace(GREEDY, speculative="off")).output
        drafted = answer(runner, tokens, GREEDY)
        assert drafted.speculator is not None
        accepted += drafted.speculator.accepted
        first = next((i for i, (a, b) in enumerate(zip(plain, drafted.output)) if a != b), None)
        if first is None and len(plain) == len(drafted.output):
            continue
        first = min(len(plain), len(drafted.output)) if first is None else first
        logits = logits_after(runner, tokens, plain[:first])
        gap = float(logits[_choice(runner, plain, first, logits)] - logits[_choice(runner, drafted.output, first, logits)])
        assert int(np.argmax(logits)) == _choice(runner, plain, first, logits), f"{text!r}: the plain run is greedy"
        assert 0.0 <= gap <= NEAR_TIE, f"{text!r}: parted at token {first}, logit gap {gap:.3f}"
        parted.append((text[:30], first, round(gap, 3)))
    # flash attention on rounds a draft's batch as one token: a parting there is rare; off, any may part
    allowed = 2 if runner.info.attention.startswith("flash attention on") else len(PROMPTS)
    assert len(parted) <= allowed, f"answers parted more often than near-ties explain: {parted}"
    assert accepted >= 80, "the copying prompts had most of their answers drafted"


def _choice(runner: LlamaCppRunner, output: list[int], position: int, logits: np.ndarray) -> int:
    """The token an answer took at `position`; past its end, the end-of-generation token it stopped on
    (the likeliest one: greedy took it)."""
    if position < len(output):
        return output[position]
    ends = [token for token in range(len(logits)) if runner.is_end_of_generation(token)]
    return max(ends, key=lambda token: float(logits[token]))


def test_a_rejected_draft_leaves_the_cache_as_a_run_that_never_drafted(runner: LlamaCppRunner) -> None:
    tokens = runner.tokenize(runner.render_chat([ChatMessage("user", PROMPTS[1])]))
    for slot in (0, 1):
        runner.clear_slot(slot)
        runner.begin_turn(slot, GREEDY)
    first = runner.forward([SlotWork(0, tokens, 0, True), SlotWork(1, tokens, 0, True)])
    token, position = first[0][0], len(tokens)
    wrong = [token] * 6  # the same token over and over: never this model's choice here
    new = runner.forward([SlotWork(0, [token], position, True, draft=wrong), SlotWork(1, [token], position, True)])
    assert new[0] == new[1] and len(new[0]) == 1, "rejected at once: the model's own token came instead"
    assert runner.remove_from(0, position + 1)
    following = new[0][0]
    runner.forward([SlotWork(s, [following], position + 1, True) for s in (0, 1)])
    drafted_then, never = runner.last_logits(0), runner.last_logits(1)
    assert int(np.argmax(drafted_then)) == int(np.argmax(never))
    assert _distribution_shift(never, drafted_then) < LAYOUT_TOLERANCE


def test_drafts_right_and_wrong_leave_a_seeded_chain_sampling_what_it_would_without(runner: LlamaCppRunner) -> None:
    """Penalty history and random state: each draft position is sampled as one token per step would be,
    and nothing is sampled past a wrong guess."""
    if not runner.info.attention.startswith("flash attention on"):
        pytest.skip("a seeded draw is bit-exact only where a batch and one token round alike (see the fixture)")
    tokens = runner.tokenize(runner.render_chat([ChatMessage("user", "Tell me a story about a dragon.")]))
    params = SamplingParams(temperature=0.9, repeat_penalty=1.5, seed=11, max_new_tokens=40)
    runner.clear_slot(0)
    runner.begin_turn(0, params)
    reference = [runner.forward([SlotWork(0, tokens, 0, True)])[0][0]]
    while len(reference) < 30:
        reference += runner.forward([SlotWork(0, [reference[-1]], len(tokens) + len(reference) - 1, True)])[0]
    runner.clear_slot(0)
    runner.begin_turn(0, params)
    produced = list(runner.forward([SlotWork(0, tokens, 0, True)])[0])
    while len(produced) < 30:
        guess = reference[len(produced) : len(produced) + 8]
        guess[4:5] = [token ^ 1 for token in guess[4:5]]  # the fifth guess wrong
        position = len(tokens) + len(produced) - 1
        new = runner.forward([SlotWork(0, [produced[-1]], position, True, draft=guess)])[0]
        assert len(new) == min(5, len(guess) + 1)
        produced += new
        runner.remove_from(0, position + len(new))
    # A sampled draw moves only if a logit's last digits carry it across a boundary: about 1e-5 a token.
    assert produced[:30] == reference

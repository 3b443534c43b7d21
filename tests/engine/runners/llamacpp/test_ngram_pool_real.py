"""The shared n-gram pool on the llama.cpp runner and the real default model: a greedy answer never
changes with it.

Chat b is asked what chat a was asked, in another chat: its own context holds none of the answer, the
model's pool holds all of it. A greedy answer (like a seeded one) must repeat whatever other chats wrote,
so it drafts from its own conversation only: with the pool on and off it is the same, token for token.
Against the answer without any drafts it may part only where two candidates were within NEAR_TIE (a
draft's batch rounds unlike one token on some CPUs: tests/engine/runners/llamacpp/test_speculative.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

import pytest

from engine.protocol import ChatMessage, SamplingParams
from engine.runners.llamacpp.runner import LlamaCppRunner
from engine.scheduler import Scheduler
from engine.sequence import Sequence
from tests.engine.runners.llamacpp.test_runner import NEAR_TIE, _load
from tests.engine.runners.llamacpp.test_speculative import _choice, logits_after
from tests.engine.test_speculative_scheduler import FixedCost

GREEDY = SamplingParams(temperature=0, repeat_penalty=1.0, max_new_tokens=40, speculative="auto")
QUESTION = "Write a short poem about the sea."


@pytest.fixture(scope="module")
def runner(default_model: str) -> Iterable[LlamaCppRunner]:
    loaded = _load(default_model, slots=2, context_length=512, batch_tokens=128, flash_attention="on", threads=1)
    yield loaded
    loaded.close()


def two_chats(runner: LlamaCppRunner, params: SamplingParams, pool: bool) -> tuple[Sequence, Sequence]:
    """Chat a, then chat b with the same question: b's context ends where a's answer began."""
    for slot in (0, 1):
        runner.clear_slot(slot)
    scheduler = Scheduler(runner, FixedCost(0.1), ngram_pool=pool)
    turns = []
    tokens = runner.tokenize(runner.render_chat([ChatMessage("user", QUESTION)]))
    for chat in ("a", "b"):
        scheduler.submit(chat, tokens, params)
        turns.append(scheduler.waiting[-1])
        while scheduler.has_work():
            scheduler.step()
    return turns[0], turns[1]


def parting(runner: LlamaCppRunner, tokens: list[int], plain: list[int], drafted: list[int]) -> int | None:
    """Where a drafted answer first parts from the plain one (None: never); a parting must be a near-tie."""
    first = next((i for i, (a, b) in enumerate(zip(plain, drafted)) if a != b), None)
    if first is None and len(plain) == len(drafted):
        return None
    first = min(len(plain), len(drafted)) if first is None else first
    logits = logits_after(runner, tokens, plain[:first])
    gap = float(logits[_choice(runner, plain, first, logits)] - logits[_choice(runner, drafted, first, logits)])
    assert 0.0 <= gap <= NEAR_TIE, f"parted at token {first}, logit gap {gap:.3f}: more than a near-tie"
    return first


def test_a_greedy_answer_is_the_same_with_the_pool_on_and_off_and_takes_no_guess_from_it(
        runner: LlamaCppRunner) -> None:
    plain_a, plain_b = two_chats(runner, replace(GREEDY, speculative="off"), pool=False)
    off_a, off_b = two_chats(runner, GREEDY, pool=False)
    on_a, on_b = two_chats(runner, GREEDY, pool=True)
    tokens = runner.tokenize(runner.render_chat([ChatMessage("user", QUESTION)]))
    assert len(plain_a.output) == 40, "a long enough answer to repeat"
    assert plain_b.output == plain_a.output, "greedy, no drafts, the same batch shape: the same answer"
    assert (on_a.output, on_b.output) == (off_a.output, off_b.output), "the pool changes no greedy token"
    assert on_b.speculator is not None and "pool" not in on_b.speculator.by_source
    for plain, drafted in ((plain_a, off_a), (plain_b, off_b)):
        parting(runner, tokens, plain.output, drafted.output)

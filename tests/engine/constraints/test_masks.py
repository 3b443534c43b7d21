"""A step's masks come out the same whether they fill beside the forward pass or before it."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers")

from llguidance import LLTokenizer  # noqa: E402

from engine.constraints.overlap import EXPLORE_EVERY, MaskWorker, OverlapChoice  # noqa: E402
from engine.constraints.slots import SlotConstraints, spare_core  # noqa: E402
from engine.protocol import Constraint  # noqa: E402

pytestmark = pytest.mark.hf

SCHEMA = Constraint("json_schema", json.dumps({
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer"}},
    "required": ["city", "days"], "additionalProperties": False}))
ANSWER = '{"city": "Porto", "days": 3}'


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> LLTokenizer:
    from llguidance.hf import from_tokenizer

    from tests.engine.runners.hf.tiny_hf import build_tokenizer

    return from_tokenizer(build_tokenizer(tmp_path_factory.mktemp("tokenizer")))


def constraints(tokenizer: LLTokenizer, slots: int) -> SlotConstraints:
    made = SlotConstraints(lambda: tokenizer, tokenizer.vocab_size)
    for slot in range(slots):
        made.set(slot, SCHEMA)
    return made


@pytest.mark.parametrize("draft", ["", "answer", "forbidden"], ids=["plain", "drafted", "forbidden-draft"])
def test_masks_filled_before_the_pass_equal_those_filled_beside_it(tokenizer: LLTokenizer, draft: str) -> None:
    """Beside the pass every row fills at once (llguidance advances over the draft and rolls back); filled
    first, a draft row fills when sampling reaches it. Past a token the schema forbids (here `}` inside
    the answer's string or number) both leave the row all allowed."""
    tokens = tokenizer.tokenize_str(ANSWER)
    (brace,) = tokenizer.tokenize_str("}")
    beside, before = constraints(tokenizer, 3), constraints(tokenizer, 3)
    compared = narrow = 0
    for at, token in enumerate(tokens):
        guess = {"": [], "answer": tokens[at + 1 : at + 3], "forbidden": [*tokens[at + 1 : at + 2], brace, brace]}[draft]
        wanted = [(slot, guess) for slot in range(3)]
        beside.start_masks(wanted, concurrent=True)
        beside.wait_masks()
        before.start_masks(wanted, concurrent=False)  # filled on return, nothing to wait for
        for slot in range(3):
            for offset in range(1 + len(guess)):
                here, there = before.allowed(slot, offset), beside.allowed(slot, offset)
                assert here is not None and there is not None
                assert np.array_equal(here, there), (at, slot, offset)
                compared += 1
            assert before.allowed(slot, 0)[token]  # type: ignore[index]  # the answer's own next token
        narrow += int(before.allowed(0, 0).sum() < tokenizer.vocab_size // 2)  # type: ignore[union-attr]
        for made in (beside, before):
            for slot in range(3):
                made.consume(slot, [token], lambda _: False)
    assert compared >= len(tokens) * 3
    assert narrow >= 3  # outside the strings the schema forbids most of the vocabulary: the masks mask
    for made in (beside, before):
        made.close()


def test_a_pass_on_every_core_leaves_none_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("engine.constraints.slots._CORES", 2)
    assert not spare_core(2)
    assert spare_core(1)


@pytest.mark.parametrize("concurrent", [False, True], ids=["first", "beside"])
def test_forbid_sets_exactly_the_forbidden_logits_to_minus_infinity(tokenizer: LLTokenizer, concurrent: bool) -> None:
    """Beside the pass the mask thread also writes the row to add; first, forbid() writes it."""
    made = constraints(tokenizer, 2)
    made.set(1, None)  # slot 1 free
    tokens = tokenizer.tokenize_str(ANSWER)
    random = np.random.default_rng(0)
    for token in tokens:
        made.start_masks([(0, []), (1, [])], concurrent=concurrent)
        made.wait_masks()
        allowed = made.allowed(0, 0)
        assert allowed is not None
        logits = random.standard_normal(tokenizer.vocab_size).astype(np.float32)
        kept = logits.copy()
        assert made.forbid(0, 0, logits) and not made.forbid(1, 0, logits) and not made.forbid(0, 1, logits)
        assert np.array_equal(logits, np.where(allowed, kept, np.float32(-np.inf)))
        made.consume(0, [token], lambda _: False)
    made.close()


@pytest.mark.parametrize("draft", ["", "answer", "forbidden"], ids=["plain", "drafted", "forbidden-draft"])
def test_the_matcher_allows_a_token_exactly_where_the_mask_does(tokenizer: LLTokenizer, draft: str) -> None:
    """allows() on a row not filled asks the matcher about the one token (after the row's draft tokens),
    or fills the mask where the schema forces the next bytes (the key after `{"c`: the mask allows only
    the canonical token, the matcher also `i`); on every row of every step of the answer it must agree
    with the mask's bit for every token."""
    tokens = tokenizer.tokenize_str(ANSWER)
    (brace,) = tokenizer.tokenize_str("}")
    asked, filled = constraints(tokenizer, 1), constraints(tokenizer, 1)
    disagreements, forbidden, asked_only = [], 0, 0
    for at, token in enumerate(tokens):
        guess = {"": [], "answer": tokens[at + 1 : at + 3], "forbidden": [*tokens[at + 1 : at + 2], brace]}[draft]
        for made in (asked, filled):
            made.start_masks([(0, guess)], concurrent=False)
        for offset in range(1 + len(guess)):
            mask = filled.allowed(0, offset)
            assert mask is not None
            for candidate in range(tokenizer.vocab_size):
                if asked.allows(0, offset, candidate) != mask[candidate]:
                    disagreements.append((at, offset, candidate))
            forbidden += int((~mask).sum())
        asked_only += not asked._filled_late
        for made in (asked, filled):
            made.consume(0, [token], lambda _: False)
    assert disagreements == []
    assert asked_only >= 4, "inside the string and the number the matcher answers alone"
    assert forbidden > tokenizer.vocab_size * len(tokens) // 2, "the rows forbid most tokens: the check can fail"


@pytest.mark.parametrize("concurrent", [False, True], ids=["after", "beside"])
def test_a_greedy_sample_is_the_best_token_of_the_masked_row(tokenizer: LLTokenizer, concurrent: bool) -> None:
    """best() is np.argmax of the row with the forbidden tokens at -inf, whether it found the token by
    asking the matcher (the answer's own token made the best: no mask filled), by trying the next best
    ones, or from the mask; the only logits it changes are forbidden tokens'."""
    made = constraints(tokenizer, 2)
    made.set(1, None)
    random = np.random.default_rng(1)
    unfilled = 0
    for token in tokenizer.tokenize_str(ANSWER):
        for trial in range(8):
            made.start_masks([(0, []), (1, [])], concurrent=concurrent)
            made.wait_masks()
            logits = random.standard_normal(tokenizer.vocab_size).astype(np.float32)
            if trial % 2:
                logits[token] += 10.0  # the answer's own token the best: allowed
            kept = logits.copy()
            best = made.best(0, 0, logits)
            unfilled += not made._filled_late
            allowed = made.allowed(0, 0)
            assert allowed is not None
            assert best == int(np.argmax(np.where(allowed, kept, np.float32(-np.inf))))
            assert not allowed[logits != kept].any() and np.isneginf(logits[logits != kept]).all()
            assert made.best(1, 0, kept.copy()) == int(np.argmax(kept)), "a free slot: the plain best"
        made.consume(0, [token], lambda _: False)
    if not concurrent:
        assert unfilled >= 4 * 4, "an allowed best token needs no mask (inside the string and the number)"


def test_the_mask_thread_hands_its_failure_to_the_engine_thread_and_ends_on_close() -> None:
    worker = MaskWorker()
    done: list[int] = []
    worker.submit(lambda: done.append(1))
    worker.wait()
    assert done == [1]

    def fail() -> None:
        raise ValueError("no mask")

    worker.submit(fail)
    with pytest.raises(ValueError, match="no mask"):
        worker.wait()
    worker.submit(lambda: done.append(2))  # it goes on after a failure
    worker.close()
    assert done == [1, 2] and not worker._thread.is_alive()


def test_a_pass_on_every_core_gives_the_masks_a_thread_where_the_measured_times_say_so() -> None:
    choice = OverlapChoice()
    assert choice.threads(2) == 2, "nothing measured yet: every core"
    choice.record_masks(0.0002, beside=False)
    assert choice.threads(2) == 2, "the pass on every core is measured first"
    choice.record_pass(2, 0.010)
    assert choice.threads(2) == 1, "then once on a thread fewer"
    choice.record_pass(1, 0.018)  # SmolLM2-like: 10 ms + 0.2 ms of masks after, against 18 ms beside
    assert choice.threads(2) == 1, "until the masks beside the pass are measured too"
    choice.record_masks(0.0002, beside=True)
    assert choice.threads(1) == 1, "a pass on one thread keeps it"
    picks = [choice.threads(2) for _ in range(2 * EXPLORE_EVERY)]
    assert picks.count(2) == 2 * EXPLORE_EVERY - 2 and picks.count(1) == 2, "after, but the other tried now and then"
    small = _measured(after=0.0003, beside=0.0003)  # a narrow model, large vocabulary: 0.5 + 0.3 ms after, 0.6 beside
    picks = [small.threads(2) for _ in range(EXPLORE_EVERY)]
    assert picks.count(1) == EXPLORE_EVERY - 1 and picks.count(2) == 1
    greedy = _measured(after=0.00002, beside=0.0003)  # the same, but greedy samples the schema allows need no mask
    picks = [greedy.threads(2) for _ in range(EXPLORE_EVERY)]
    assert picks.count(2) == EXPLORE_EVERY - 1 and picks.count(1) == 1


def _measured(after: float, beside: float) -> OverlapChoice:
    choice = OverlapChoice()
    choice.record_masks(after, beside=False)
    choice.record_masks(beside, beside=True)
    choice.record_pass(2, 0.0005)
    choice.record_pass(1, 0.0006)
    return choice

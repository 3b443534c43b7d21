"""A step's masks come out the same whether they fill beside the forward pass or before it."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers")

from llguidance import LLTokenizer  # noqa: E402

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


@pytest.mark.parametrize("draft", [False, True], ids=["plain", "drafted"])
def test_masks_filled_before_the_pass_equal_those_filled_beside_it(tokenizer: LLTokenizer, draft: bool) -> None:
    tokens = tokenizer.tokenize_str(ANSWER)
    beside, before = constraints(tokenizer, 3), constraints(tokenizer, 3)
    compared = narrow = 0
    for at, token in enumerate(tokens):
        guess = tokens[at + 1 : at + 3] if draft else []
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


def test_a_pass_on_every_core_leaves_none_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    assert not spare_core(2)
    assert spare_core(1)

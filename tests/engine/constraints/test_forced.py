"""Tokens a constraint forces, walked with the mask (engine/constraints/forced.py) and fed as a draft: each is the
one token its row's mask allows, the walk leaves the matcher where it was, and after a forced draft, whole or
cut short by the plan, every row of the step is the mask of its own position."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("transformers")

from llguidance import LLTokenizer  # noqa: E402

from engine.constraints import bits  # noqa: E402
from engine.constraints.slots import SlotConstraints  # noqa: E402
from engine.protocol import Constraint  # noqa: E402

pytestmark = pytest.mark.hf

SCHEMA = Constraint("json_schema", json.dumps({
    "type": "object", "additionalProperties": False, "required": ["city", "days", "tags"],
    "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer"},
                   "tags": {"type": "array", "maxItems": 2, "items": {"enum": ["sea", "old town"]}}}}))
ANSWER = '{"city": "Porto", "days": 3, "tags": ["old town", "sea"]}'


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> LLTokenizer:
    from llguidance.hf import from_tokenizer

    from tests.engine.runners.hf.tiny_hf import build_tokenizer

    return from_tokenizer(build_tokenizer(tmp_path_factory.mktemp("tokenizer")))


def _constrained(tokenizer: LLTokenizer) -> SlotConstraints:
    made = SlotConstraints(lambda: tokenizer, tokenizer.vocab_size)
    made.set(0, SCHEMA)
    return made


def _never_ends(token: int) -> bool:
    return False


def test_each_forced_token_is_the_one_its_row_allows_and_spells_the_answer_on(tokenizer: LLTokenizer) -> None:
    walked, reference = _constrained(tokenizer), _constrained(tokenizer)
    tokens = tokenizer.tokenize_str(ANSWER)
    forced_at: dict[int, list[int]] = {}
    for at, token in enumerate(tokens):
        forced = walked.forced(0, 16, _never_ends)
        reference.start_masks([(0, forced)], concurrent=True)
        reference.wait_masks()
        for offset, expected in enumerate(forced):
            allowed = reference.allowed(0, offset)
            assert allowed is not None and np.flatnonzero(allowed).tolist() == [expected], (at, offset)
        rest = tokenizer.decode_bytes(tokens[at:])
        assert rest.startswith(tokenizer.decode_bytes(forced)), (at, forced)
        forced_at[at] = forced
        walked.start_masks([(0, [])], concurrent=False)  # the walk left the matcher where it was
        assert np.array_equal(walked.allowed(0, 0), reference.allowed(0, 0))  # type: ignore[arg-type]
        for made in (walked, reference):
            made.consume(0, [token], _never_ends)
    assert tokenizer.decode_bytes(forced_at[0]).startswith(b'{"city": '), "the first key is forced whole"
    assert sum(map(bool, forced_at.values())) >= 5 and b'", "days": ' in b"".join(
        tokenizer.decode_bytes(f) for f in forced_at.values()), "every key after the first is forced with its quote"
    assert tokenizer.decode_bytes(forced_at[len(tokens) - 1]) == b"}", "after the array only its object's brace"
    for made in (walked, reference):
        made.close()


@pytest.mark.parametrize("cut", [0, 1, None], ids=["cut-to-none", "cut-to-one", "whole"])
def test_after_a_forced_draft_each_row_is_its_own_positions_mask(tokenizer: LLTokenizer, cut: int | None) -> None:
    """The walk also leaves the mask of the row after the forced tokens: it stands for that row only where the
    step's draft is the whole walk; a draft the plan cut short has its rows filled for their own positions."""
    made, reference = _constrained(tokenizer), _constrained(tokenizer)
    tokens = tokenizer.tokenize_str(ANSWER)
    at = next(at for at in range(len(tokens)) if tokenizer.decode_bytes(tokens[:at]) == b'{"city": "Porto"')
    for constraints in (made, reference):
        constraints.consume(0, tokens[:at], _never_ends)
    forced = made.forced(0, 16, _never_ends)
    # `, "days": ` is forced, but not how its space is spelled: ` ` or ` 3` (the walk's last mask, a choice)
    assert tokenizer.decode_bytes(forced) == b', "days":'
    draft = forced[:cut]
    made.start_masks([(0, draft)], concurrent=False)
    assert made._filled_late == ({len(draft)} if cut is None else set()), "the walk's last mask: the whole draft's"
    reference.start_masks([(0, draft)], concurrent=True)
    reference.wait_masks()
    random = np.random.default_rng(2)
    for offset in range(1 + len(draft)):
        mask = reference.allowed(0, offset)
        assert mask is not None
        logits = random.standard_normal(tokenizer.vocab_size).astype(np.float32)
        logits[np.flatnonzero(~mask)[0]] = 100.0  # the best token is one the row forbids
        kept = logits.copy()
        assert made.best(0, offset, logits) == int(np.argmax(np.where(mask, kept, np.float32(-np.inf))))
        assert np.array_equal(made.allowed(0, offset), mask), offset  # type: ignore[arg-type]
    for constraints in (made, reference):
        constraints.close()


def test_the_walk_stops_at_its_limit_and_before_an_end_of_generation(tokenizer: LLTokenizer) -> None:
    made = _constrained(tokenizer)
    whole = made.forced(0, 16, _never_ends)
    assert made.forced(0, 2, _never_ends) == whole[:2] and made.forced(0, 0, _never_ends) == []
    assert made.forced(0, 16, lambda token: token == whole[1]) == whole[:1]
    made.set(1, None)
    assert made.forced(1, 16, _never_ends) == [], "a free chat has nothing forced"
    made.close()


@pytest.mark.parametrize("token", [0, 5, 31, 32, 63, 399])
def test_a_row_with_one_bit_names_its_token(token: int) -> None:
    mask = np.zeros(bits.words(400), dtype=np.int32)
    assert bits.single_token(mask) is None
    mask.view(np.uint32)[token >> 5] |= np.uint32(1 << (token & 31))
    assert bits.single_token(mask) == token
    other = (token + 1) % 400
    mask.view(np.uint32)[other >> 5] |= np.uint32(1 << (other & 31))
    assert bits.single_token(mask) is None
    bits.only(mask, other)
    assert bits.single_token(mask) == other and bits.sparse_tokens(mask).tolist() == [other]

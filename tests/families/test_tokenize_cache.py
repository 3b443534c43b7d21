"""llguidance's tokenizer calls, remembered (engine/runners/llamacpp/tokenize_cache.py): on the vocabularies where
llama.cpp's tokenizer is slow per call (gpt-oss's o200k, Mistral's tekken) and on one where it is not, the
remembering function gives llguidance llama.cpp's own tokens and the same masks, and asks llama.cpp once per text."""

from __future__ import annotations

import functools
import json
from typing import Any

import numpy as np
import pytest
from llguidance import LLMatcher
from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask

from engine.constraints.grammar import grammar_for
from engine.protocol import Constraint
from engine.runners.llamacpp import tokenize_cache
from engine.runners.llamacpp.rows import llguidance_tokenizer
from engine.runners.llamacpp.tokenize_cache import TokenizeFunction
from tests.families.vocab_view import family_vocabulary

SCHEMA = {"type": "object", "required": ["people"], "properties": {"people": {"type": "array", "items": {
    "type": "object", "required": ["name", "age"], "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}}}}}
ANSWER = '{"people": [{"name": "Ana", "age": 34}, {"name": "Bo", "age": 7}]}'


@functools.cache
def own(name: str) -> tuple[TokenizeFunction, Any]:
    """The family's llguidance tokenizer on llama_tokenize itself (and the function it was built with)."""
    family = family_vocabulary(name)
    itself = TokenizeFunction(family.vocab, remember=False)
    return itself, llguidance_tokenizer(family.vocab, family.n_vocab, family.is_end, itself)


TEXTS = [b"", b'{"', b'": "', b"people", "Zoë naïve 東京 🙂".encode(), b" " * 40, b'{"name": "' * 60, b"\xe6\x9d"]


@pytest.mark.parametrize("name", ["gpt_oss", "mistral_nemo", "qwen3"])
def test_remembered_calls_give_llamacpps_tokens_and_the_same_masks(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    family = family_vocabulary(name)
    asked: list[bytes] = []
    native = tokenize_cache.tokenize_bytes
    monkeypatch.setattr(tokenize_cache, "tokenize_bytes",
                        lambda vocab, data, add, parse: asked.append(data) or native(vocab, data, add, parse))
    remembering, (itself, reference) = TokenizeFunction(family.vocab, remember=True), own(name)
    assert remembering.remembers and not itself.remembers and remembering.address != itself.address
    tokenizer = llguidance_tokenizer(family.vocab, family.n_vocab, family.is_end, remembering)
    for text in TEXTS:  # a long one (past the buffer llguidance offers first), an empty one, a cut UTF-8 one
        assert tokenizer.tokenize_bytes(text) == reference.tokenize_bytes(text), text
    assert asked, "llguidance asked through the remembering function"
    grammar = grammar_for(Constraint("json_schema", json.dumps(SCHEMA)))
    tokens = reference.tokenize_str(ANSWER)
    masks, new_asks = [], []
    for view in (reference, tokenizer, tokenizer):  # the second pass of the remembering one: from memory
        before = len(asked)
        matcher, rows = LLMatcher(view, grammar), []
        mask = allocate_token_bitmask(1, view.vocab_size)
        for token in tokens:
            fill_next_token_bitmask(matcher, mask, 0)
            rows.append(mask[0].copy())
            assert matcher.consume_token(token), view.decode_bytes([token])
        assert matcher.is_accepting()
        masks.append(np.stack(rows))
        new_asks.append(len(asked) - before)
    assert new_asks[0] == 0 and new_asks[1] > 0, "the forced keys' masks ask the tokenizer"
    assert new_asks[2] == 0, "and every text asked again was remembered"
    assert np.array_equal(masks[0], masks[1]) and np.array_equal(masks[1], masks[2])


def test_llguidances_pool_threads_call_the_remembering_function_at_once() -> None:
    """Beside the pass, masks fill on llguidance's pool (slots.py): its threads call back into Python together,
    each taking the GIL; the masks are the ones llama_tokenize's own function gives."""
    from llguidance import LLExecutor
    from llguidance.numpy import fill_next_token_bitmask_par

    family = family_vocabulary("gpt_oss")
    grammar = grammar_for(Constraint("json_schema", json.dumps(SCHEMA)))
    masks = []
    for remember in (False, True):
        tokenizer = own("gpt_oss")[1] if not remember else llguidance_tokenizer(
            family.vocab, family.n_vocab, family.is_end, TokenizeFunction(family.vocab, remember=True))
        tokens = tokenizer.tokenize_str(ANSWER)
        matchers = []
        for cut in range(1, len(tokens), 2):  # one matcher per place along the answer, forced or not
            matcher = LLMatcher(tokenizer, grammar)
            assert matcher.consume_tokens(tokens[:cut])
            matchers.append((matcher, len(matchers)))
        mask = allocate_token_bitmask(len(matchers), tokenizer.vocab_size)
        fill_next_token_bitmask_par(LLExecutor(), matchers, mask)
        masks.append(mask)
    assert masks[0].shape[0] >= 8 and np.array_equal(masks[0], masks[1])

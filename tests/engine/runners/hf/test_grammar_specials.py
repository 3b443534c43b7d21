"""Which added tokens of a transformers vocabulary a grammar names by id: the ones llguidance keeps out of text.

transformers marks Qwen's `<tool_call>` and `<think>` as added tokens that are not special, but llguidance's
view of the same vocabulary (llguidance.hf) makes them special: a grammar that spelled them as quoted text
ended a forced call's turn right after the model wrote `<tool_call>` (the matcher failed on it and allowed
only the end token). The runner's rule must be llguidance's, and the same as the llama.cpp runner's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from llguidance import LLMatcher
from llguidance.hf import from_tokenizer

from engine.constraints.grammar import grammar_for
from engine.parsing.call_grammar import whole_answer
from engine.parsing.formats import ToolCallFormat
from engine.protocol import ToolSpec
from engine.runners.hf.text import output_format, special_token_id

# (text, transformers' special flag): markers, near-markers and plain words, special or not
ADDED = [("<tool_call>", False), ("</tool_call>", False), ("<think>", False), ("<|im_end|>", True),
         ("<|x|>", False), ("<a b>", False), ("[TOOL_CALLS]", False), ("[ARGS]", True), ("<open", False),
         ("close>", False), (" <spaced>", False), ("plainword", False)]
HERMES = ToolCallFormat(family="hermes", style="json", open="<tool_call>", close="</tool_call>", name_key="name",
                        arguments_key="arguments", separator="\n")
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
        "additionalProperties": False}


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """A byte-level BPE vocabulary of single bytes (any text can be written), with the ADDED tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    backend = Tokenizer(models.BPE(vocab={char: index for index, char in enumerate(sorted(alphabet))}, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    backend.decoder = decoders.ByteLevel()
    made = PreTrainedTokenizerFast(tokenizer_object=backend)
    for text, special in ADDED:
        made.add_tokens([AddedToken(text, special=special, normalized=False)], special_tokens=special)
    made.eos_token = "<|im_end|>"
    return made


def test_an_added_token_is_named_by_id_exactly_where_llguidance_keeps_it_out_of_text(tokenizer: Any) -> None:
    guidance = from_tokenizer(tokenizer, eos_token=tokenizer.eos_token_id)
    ids = {text: tokenizer.convert_tokens_to_ids(text) for text, _ in ADDED}
    named = {text: special_token_id(tokenizer, text) for text, _ in ADDED}
    kept_out = {text: guidance.is_special_token(token) for text, token in ids.items()}
    assert {text: token is not None for text, token in named.items()} == kept_out
    assert named["<tool_call>"] == ids["<tool_call>"] and named["<think>"] == ids["<think>"]
    assert not tokenizer.added_tokens_decoder[ids["<tool_call>"]].special  # what transformers says


def test_a_forced_hermes_call_opened_by_a_non_special_added_token_is_matched_to_its_end(tokenizer: Any) -> None:
    guidance = from_tokenizer(tokenizer, eos_token=tokenizer.eos_token_id)
    specials = {text: token for text in ("<tool_call>", "</tool_call>")
                if (token := special_token_id(tokenizer, text)) is not None}
    weather = ToolSpec("get_weather", "The weather now", json.dumps(CITY))
    matcher = LLMatcher(guidance, grammar_for(whole_answer(HERMES, [weather], "required", False, specials)))
    body = json.dumps({"name": "get_weather", "arguments": {"city": "Paris"}})
    # what the model writes: the markers as the single tokens they are in its vocabulary
    written = [tokenizer.convert_tokens_to_ids("<tool_call>"),
               *tokenizer.encode("\n" + body + "\n", add_special_tokens=False),
               tokenizer.convert_tokens_to_ids("</tool_call>")]
    for token in written:
        assert matcher.consume_token(token), matcher.get_error()
    assert matcher.is_accepting() and not matcher.is_error()


@pytest.mark.slow
def test_the_qwen3_fixture_has_the_same_special_markers_in_transformers_and_llamacpp() -> None:
    """The Qwen3 fixture's vocabulary read by transformers (converted from its GGUF once per machine and kept:
    tests/families/hf_folder.py) and by llama.cpp."""
    from transformers import AutoTokenizer

    from tests.families.hf_folder import family_hf_folder
    from tests.families.vocab_view import family_vocabulary

    hf_format = output_format(AutoTokenizer.from_pretrained(str(family_hf_folder("qwen3"))))
    expected = family_vocabulary("qwen3").output.special_tokens
    assert dict(hf_format.special_tokens) == dict(expected)
    assert {"<tool_call>", "</tool_call>", "<think>", "</think>"} <= dict(expected).keys()

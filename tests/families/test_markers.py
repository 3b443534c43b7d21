"""Token by token, model-free: each family fixture's markers are its vocabulary's own special tokens,
and a forced tool call is written with those tokens, not spelled in pieces."""

from __future__ import annotations

import json

import numpy as np
import pytest
from llguidance import LLMatcher
from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask

from engine.constraints.grammar import grammar_for
from engine.parsing.call_grammar import whole_answer
from engine.parsing.harmony import HarmonyParser
from engine.parsing.stream import OutputParser
from engine.protocol import ToolSpec
from tests.families.recipes import FAMILIES
from tests.families.vocab_view import FamilyVocabulary, family_vocabulary

WEATHER = ToolSpec("get_weather", "The weather in a city.", json.dumps(
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
ARGUMENTS = '{"city": "Paris"}'
# family -> the call as the family writes it: pieces, each a special token's text or plain text
CALLS = {
    "qwen3": ["<tool_call>", '\n{"name": "get_weather", "arguments": ' + ARGUMENTS + "}\n", "</tool_call>"],
    "qwen3_coder": ["<tool_call>", "\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n",
                    "</tool_call>"],
    "qwen2_5": ["<tool_call>", '\n{"name": "get_weather", "arguments": ' + ARGUMENTS + "}\n", "</tool_call>"],
    "llama3_1": ['{"name": "get_weather", "parameters": ' + ARGUMENTS + "}"],
    "mistral_nemo": ["[TOOL_CALLS]", '[{"name": "get_weather", "arguments": ' + ARGUMENTS + "}]"],
    "devstral": ["[TOOL_CALLS]", "get_weather", "[ARGS]", ARGUMENTS],
    "ministral_reasoning": ["[TOOL_CALLS]", "get_weather", "[ARGS]", ARGUMENTS],
    "r1_distill": ["<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n", ARGUMENTS,
                   "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"],
    "gemma4": ["<|tool_call>", "call:get_weather{city:", '<|"|>', "Paris", '<|"|>', "}", "<tool_call|>",
               "<|tool_response>"],
    "gpt_oss": ["<|channel|>", "commentary to=functions.get_weather ", "<|constrain|>", "json", "<|message|>",
                ARGUMENTS],
}


def vocabulary(name: str) -> FamilyVocabulary:
    return family_vocabulary(name)


def tokens_of(family: FamilyVocabulary, pieces: list[str]) -> list[int]:
    specials = dict(family.output.special_tokens)
    ids: list[int] = []
    for piece in pieces:
        ids += [specials[piece]] if piece in specials else family.tokens(piece)
    return ids


def allowed_first(family: FamilyVocabulary, matcher: LLMatcher) -> set[int]:
    mask = allocate_token_bitmask(1, family.llguidance.vocab_size)
    fill_next_token_bitmask(matcher, mask, 0)
    bits = np.unpackbits(mask[0].view(np.uint8), bitorder="little")[: family.n_vocab]
    return set(np.flatnonzero(bits).tolist())


@pytest.mark.parametrize("name", [name for name, family in FAMILIES.items() if family.markers])
def test_each_fixture_holds_its_markers_as_single_special_tokens(name: str) -> None:
    family = vocabulary(name)
    specials = dict(family.output.special_tokens)
    for marker in FAMILIES[name].markers:
        token = family.id_of(marker)
        if marker in specials:
            assert specials[marker] == token


@pytest.mark.parametrize("name", sorted(CALLS))
def test_a_forced_call_is_written_in_the_families_own_tokens_and_parses(name: str) -> None:
    family = vocabulary(name)
    call_format = family.output.tools
    assert call_format is not None, f"{name}: no tool format found in its template"
    constraint = whole_answer(call_format, (WEATHER,), "get_weather", False, dict(family.output.special_tokens))
    matcher = LLMatcher(family.llguidance, grammar_for(constraint), log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    call = tokens_of(family, CALLS[name])
    first = allowed_first(family, matcher)
    assert call[0] in first
    opening = call_format.calls_open + call_format.open
    if any(opening.startswith(marker) for marker in dict(family.output.special_tokens)):
        # the marker's own token, never its first character as text
        assert family.tokens(opening[0])[0] not in first, f"{name}: {opening[0]!r} may start the call"
    for token in call:
        assert matcher.consume_token(token), f"{name}: token {token} refused after {call[: call.index(token)]}"
    assert matcher.is_accepting()
    text = "".join(CALLS[name])
    parser = HarmonyParser() if family.output.harmony else OutputParser(family.output, call_format, False, (WEATHER,))
    parser.feed(text)
    parser.finish()
    assert [(c.name, json.loads(c.arguments)) for c in parser.calls] == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("name", ["gpt_oss", "devstral"])
def test_the_name_follows_a_name_args_marker_at_once(name: str) -> None:
    """`to=functions. get_weather` is no call to harmony's reader (nor `[TOOL_CALLS] get_weather` to Mistral's):
    the grammar leaves no room for whitespace between the marker and the name."""
    family = vocabulary(name)
    assert family.output.tools is not None and family.output.tools.style == "name_args"
    constraint = whole_answer(family.output.tools, (WEATHER,), "required", False, dict(family.output.special_tokens))
    spaced = [piece.replace("get_weather", " get_weather") for piece in CALLS[name]]
    for pieces, expected in ((CALLS[name], True), (spaced, False)):
        matcher = LLMatcher(family.llguidance, grammar_for(constraint), log_level=0)
        accepted = all(matcher.consume_token(token) for token in tokens_of(family, pieces)) and matcher.is_accepting()
        assert accepted is expected, pieces

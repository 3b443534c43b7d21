"""Tool-call grammars for each call style, checked against hand-written calls through llguidance itself."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

pytest.importorskip("transformers")

from llguidance import LLMatcher, LLTokenizer  # noqa: E402

from engine.constraints import ConstraintError, grammar_for  # noqa: E402
from engine.constraints.tools import tool_call_body_constraint, tool_call_constraint  # noqa: E402
from engine.protocol import Constraint, ToolSpec  # noqa: E402

pytestmark = pytest.mark.hf

WEATHER = ToolSpec("get_weather", "", json.dumps({
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
    "required": ["city", "unit"], "additionalProperties": False}))
TIME = ToolSpec("get_time", "", json.dumps({"type": "object", "properties": {}, "additionalProperties": False}))


@dataclass(frozen=True)
class Shape:  # what engine/parsing's ToolCallFormat carries
    style: str
    open: str
    close: str = ""
    name_key: str = "name"
    arguments_key: str = "arguments"
    separator: str = "\n"
    args_marker: str = ""
    extra_keys: tuple[str, ...] = ()


HERMES = Shape("json", "<tool_call>", "</tool_call>")
LLAMA = Shape("json", "", arguments_key="parameters", separator="; ")
MISTRAL = Shape("json_array", "[TOOL_CALLS]", extra_keys=("id",))
MISTRAL_ARGS = Shape("name_args", "[TOOL_CALLS]", args_marker="[ARGS]", separator="")


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> LLTokenizer:
    from llguidance.hf import from_tokenizer

    from tests.engine.runners.hf.tiny_hf import build_tokenizer

    return from_tokenizer(build_tokenizer(tmp_path_factory.mktemp("tokenizer")))


def matches(tokenizer: LLTokenizer, constraint: Constraint, text: str) -> bool:
    matcher = LLMatcher(tokenizer, grammar_for(constraint), log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    return matcher.consume_tokens(tokenizer.tokenize_str(text)) and matcher.is_accepting()


WEATHER_CALL = '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}'
CASES = [
    (HERMES, f"<tool_call>\n{WEATHER_CALL}\n</tool_call>", f"<tool_call>\n{WEATHER_CALL}\n</tool_call>\n"
     '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'),
    (LLAMA, WEATHER_CALL.replace("arguments", "parameters"),
     WEATHER_CALL.replace("arguments", "parameters") + '; {"name": "get_time", "parameters": {}}'),
    (MISTRAL, f'[TOOL_CALLS][{WEATHER_CALL[:-1]}, "id": "abc123XYZ"}}]',
     f'[TOOL_CALLS][{WEATHER_CALL[:-1]}, "id": "abc123XYZ"}}, '
     '{"name": "get_time", "arguments": {}, "id": "000000000"}]'),
    (MISTRAL_ARGS, '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "c"}',
     '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "c"}[TOOL_CALLS]get_time[ARGS]{}'),
]


@pytest.mark.parametrize(("shape", "one", "two"), CASES, ids=["hermes", "llama3", "mistral", "mistral-args"])
def test_required_calls_parse_and_match_their_schema(tokenizer: LLTokenizer, shape: Shape, one: str, two: str) -> None:
    required = tool_call_constraint(shape, [WEATHER, TIME])
    assert matches(tokenizer, required, one) and matches(tokenizer, required, two)
    assert not matches(tokenizer, tool_call_constraint(shape, [WEATHER, TIME], parallel=False), two)
    assert not matches(tokenizer, required, one.replace("get_weather", "get_wether")), "only the tools' names"
    assert not matches(tokenizer, required, one.replace('"c"', '"k"')), "arguments match their schema"
    assert not matches(tokenizer, tool_call_constraint(shape, [WEATHER, TIME], "get_time"), one), "the named tool"


@pytest.mark.parametrize(("shape", "one", "two"), CASES, ids=["hermes", "llama3", "mistral", "mistral-args"])
def test_a_lazy_grammar_takes_over_after_the_open_marker(tokenizer: LLTokenizer, shape: Shape, one: str,
                                                         two: str) -> None:
    body = tool_call_body_constraint(shape, [WEATHER, TIME])
    assert matches(tokenizer, body, one[len(shape.open):]) and matches(tokenizer, body, two[len(shape.open):])


def test_a_close_that_ends_the_turn_is_left_to_the_end_of_generation(tokenizer: LLTokenizer) -> None:
    harmony = Shape("name_args", "<|channel|>commentary to=functions.", "<|call|>", args_marker=" <|constrain|>json<|message|>")
    constraint = tool_call_constraint(harmony, [TIME], parallel=False, close_ends_turn=True)
    assert matches(tokenizer, constraint, "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}")


def test_special_token_markers_are_tokens_not_text(tokenizer: LLTokenizer) -> None:
    marker = "<|im_start|>"  # a special token of the tiny vocabulary standing in for <tool_call>
    shape = Shape("json", marker, "")
    constraint = tool_call_constraint(shape, [TIME], parallel=False, special_tokens={marker: 1})
    matcher = LLMatcher(tokenizer, grammar_for(constraint), log_level=0)
    assert matcher.consume_tokens([1] + tokenizer.tokenize_str('{"name": "get_time", "arguments": {}}'))
    assert matcher.is_accepting()
    assert not matches(tokenizer, constraint, '{"name": "get_time", "arguments": {}}'), "the marker comes first"
    assert "<|im_start|>" not in constraint.source, "the grammar names the token by id"


def test_bad_tool_choices_and_parameters_are_named() -> None:
    with pytest.raises(ConstraintError, match="'get_date'"):
        tool_call_constraint(HERMES, [WEATHER], "get_date")
    with pytest.raises(ConstraintError, match="'broken'"):
        tool_call_constraint(HERMES, [ToolSpec("broken", "", "{not json")])
    with pytest.raises(ConstraintError, match="at least one tool"):
        tool_call_constraint(HERMES, [])

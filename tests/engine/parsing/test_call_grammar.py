"""The tool-call grammars, per format: a call in the model's own format is accepted and parses back;
a wrong name or arguments off the schema are refused. llguidance with a byte-level tokenizer built here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.constraints.grammar import grammar_for
from engine.parsing.call_grammar import after_open, whole_answer
from engine.parsing.formats import FALLBACK_TOOL_FORMAT, OutputFormat, ToolCallFormat
from engine.parsing.stream import OutputParser
from engine.protocol import Constraint, ToolSpec
from tests.engine.parsing.test_detect import EXPECTED, WEATHER, detected

TIME = ToolSpec("get_time", "", json.dumps({"type": "object", "properties": {"zone": {"type": "string"}},
                                             "required": ["zone"], "additionalProperties": False}))
TOOLS = (WEATHER, TIME)
FORMATS = {name: detected(name).tools for name, expected in EXPECTED.items() if expected[0] not in (None, "harmony")}
FORMATS["fallback"] = FALLBACK_TOOL_FORMAT


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory):  # -> LLTokenizer
    from llguidance.hf import from_tokenizer

    from tests.engine.runners.hf.tiny_hf import build_tokenizer

    hf = build_tokenizer(Path(tmp_path_factory.mktemp("tokenizer")))
    return hf, from_tokenizer(hf, n_vocab=len(hf))


def call_text(call_format: ToolCallFormat, name: str, arguments: dict, opened: bool) -> str:
    """How the format writes one call (what the grammar must accept)."""
    args = json.dumps(arguments)
    if call_format.style == "name_args":
        body = f"{name}{call_format.args_marker}{args}"
    else:
        body = json.dumps({call_format.name_key: name, call_format.arguments_key: arguments})
        if call_format.style == "json_array":
            body = f"[{body}]"
    text = f"\n{body}\n{call_format.close}" if call_format.close else body
    return text if opened else call_format.open + text


def accepts(tokenizer, constraint: Constraint, text: str) -> bool:
    from llguidance import LLMatcher

    hf, lltokenizer = tokenizer
    matcher = LLMatcher(lltokenizer, grammar_for(constraint), log_level=0)
    ids = hf.encode(text, add_special_tokens=False)
    return all(matcher.consume_token(token) for token in ids) and matcher.is_accepting()


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_a_call_in_the_format_is_accepted_and_parses(tokenizer, name: str) -> None:
    call_format = FORMATS[name]
    assert call_format is not None
    for opened, build in ((False, whole_answer), (True, after_open)):
        text = call_text(call_format, "get_weather", {"city": "Paris"}, opened)
        assert accepts(tokenizer, build(call_format, TOOLS, "required", True), text), text
        parser = OutputParser(OutputFormat(tools=call_format), call_format)
        parser.feed(text if not opened else call_format.open + text)
        parser.finish()
        assert [(c.name, json.loads(c.arguments)) for c in parser.calls] == [("get_weather", {"city": "Paris"})]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_wrong_calls_are_refused(tokenizer, name: str) -> None:
    call_format = FORMATS[name]
    assert call_format is not None
    forced = whole_answer(call_format, TOOLS, "get_time", False)
    assert not accepts(tokenizer, forced, call_text(call_format, "get_weather", {"city": "Paris"}, False)), \
        "a named tool choice allows that tool only"
    assert not accepts(tokenizer, forced, call_text(call_format, "get_time", {"zone": 3}, False)), \
        "the arguments follow the tool's schema"
    assert not accepts(tokenizer, forced, "Sure! " + call_text(call_format, "get_time", {"zone": "UTC"}, False))
    assert accepts(tokenizer, forced, call_text(call_format, "get_time", {"zone": "UTC"}, False))


def test_harmony_leaves_its_end_of_generation_close_to_the_turn(tokenizer) -> None:
    """<|call|> ends the turn as a token of its own: the grammar ends after the arguments (no text close)."""
    harmony = ToolCallFormat("harmony", "name_args", "<|channel|>commentary to=functions.", "<|call|>",
                             args_marker=" <|constrain|>json<|message|>")
    forced = whole_answer(harmony, TOOLS, "get_time", False)
    assert "<|call|>" not in forced.source
    call = '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"zone": "UTC"}'
    assert accepts(tokenizer, forced, call)
    assert not accepts(tokenizer, forced, call + "<|call|>")


@pytest.mark.parametrize("name", ["fallback", "meta-llama-Llama-3.1-8B-Instruct", "mistralai-Mistral-Nemo-Instruct-2407",
                                  "unsloth-mistral-Devstral-Small-2507"])
def test_a_call_adds_no_key_its_schema_leaves_unsaid_as_llamacpps_grammars_read_it(tokenizer, name: str) -> None:
    """WEATHER's schema (as every MCP tool's) does not say additionalProperties: left open, a random-weight
    model wrote `"@ food food …` as a second key until max_tokens and the cut call was lost."""
    call_format = FORMATS[name]
    assert call_format is not None
    forced = whole_answer(call_format, TOOLS, "get_weather", False)
    assert accepts(tokenizer, forced, call_text(call_format, "get_weather", {"city": "Paris"}, False))
    extra = call_text(call_format, "get_weather", {"city": "Paris", "note": "x"}, False)
    assert not accepts(tokenizer, forced, extra)
    parameters = {**json.loads(WEATHER.parameters), "additionalProperties": True}
    open_weather = ToolSpec("get_weather", "", json.dumps(parameters))
    assert accepts(tokenizer, whole_answer(call_format, (open_weather,), "get_weather", False), extra)

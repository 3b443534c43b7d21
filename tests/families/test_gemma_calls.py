"""Gemma 4's calls in its own notation (keys bare, strings in <|"|>): read back as JSON however they stream,
written under the tool's schema, and what the template renders for a call is what the grammar takes."""

from __future__ import annotations

import json

import pytest
from llguidance import LLMatcher

from engine.chat_template import render_chat
from engine.constraints.grammar import grammar_for
from engine.parsing.call_grammar import whole_answer
from engine.parsing.stream import OutputParser
from engine.protocol import ChatMessage, ToolCall, ToolSpec
from tests.families.vocab_view import FamilyVocabulary, family_vocabulary

Q = '<|"|>'
PLAN = ToolSpec("plan", "Plan a trip.", json.dumps({
    "type": "object", "required": ["city", "days"],
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}, "by": {"enum": ["train", "car"]},
                   "stops": {"type": "array", "items": {"type": "string"}},
                   "budget": {"type": "object", "properties": {"eur": {"type": "number"}}}}}))
ARGUMENTS = {"budget": {"eur": 12.5}, "by": "train", "city": "Lyon, France", "days": 3, "stops": ["Dijon", "Mâcon"]}


def gemma() -> FamilyVocabulary:
    return family_vocabulary("gemma4")


def rendered_call(arguments: dict) -> str:
    """The call as Gemma 4's own template writes it in an assistant message."""
    family = gemma()
    message = ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "plan", json.dumps(arguments)),))
    text = render_chat(family.template, [ChatMessage("user", "Go"), message], "<bos>", "<eos>", (PLAN,), (), False)
    start = text.rindex("<|tool_call>")
    return text[start : text.index("<tool_call|>", start) + len("<tool_call|>")]


@pytest.mark.parametrize("piece", [1, 4, 10_000])
def test_the_templates_call_reads_back_as_its_json(piece: int) -> None:
    text = rendered_call(ARGUMENTS) + "<|tool_response>"
    parser = OutputParser(gemma().output, gemma().output.tools, False, (PLAN,))
    for start in range(0, len(text), piece):
        parser.feed(text[start : start + piece])
    parser.finish()
    assert [(c.name, json.loads(c.arguments)) for c in parser.calls] == [("plan", ARGUMENTS)]
    assert parser.calls_closed


def tokens(text: str) -> list[int]:
    """Gemma's special tokens by id, the rest tokenized."""
    family, specials, ids, rest = gemma(), dict(gemma().output.special_tokens), [], text
    while rest:
        at, marker = min(((rest.find(m), m) for m in specials if m in rest), default=(-1, ""))
        if at < 0:
            return ids + family.tokens(rest)
        ids += family.tokens(rest[:at]) if at else []
        ids.append(specials[marker])
        rest = rest[at + len(marker) :]
    return ids


def accepts(call: str) -> bool:
    family = gemma()
    constraint = whole_answer(family.output.tools, (PLAN,), "plan", False, dict(family.output.special_tokens))
    matcher = LLMatcher(family.llguidance, grammar_for(constraint), log_level=0)
    assert not matcher.is_error(), matcher.get_error()
    return all(matcher.consume_token(t) for t in tokens(call + "<|tool_response>")) and matcher.is_accepting()


def test_the_grammar_takes_what_the_template_renders_and_refuses_what_the_schema_does_not() -> None:
    assert accepts(rendered_call(ARGUMENTS))
    assert accepts(rendered_call({"city": "Lyon", "days": 1}))  # the optional ones left out
    assert not accepts(rendered_call({"city": "Lyon"}))  # days is required
    assert not accepts(rendered_call({"city": "Lyon", "days": 1, "by": "plane"}))  # not in the enum
    assert not accepts(f"<|tool_call>call:plan{{city:{Q}Lyon{Q},days:1.5}}<tool_call|>")  # not an integer


def test_a_string_holds_its_schemas_length() -> None:
    """Unbounded, a random-weight model wrote one string until max_tokens and the cut call was lost."""
    family = gemma()
    short = ToolSpec("plan", "", json.dumps({"type": "object", "required": ["city"], "properties": {
        "city": {"type": "string", "minLength": 2, "maxLength": 5}}}))
    constraint = whole_answer(family.output.tools, (short,), "plan", False, dict(family.output.special_tokens))

    def takes(city: str) -> bool:
        matcher = LLMatcher(family.llguidance, grammar_for(constraint), log_level=0)
        call = f"<|tool_call>call:plan{{city:{Q}{city}{Q}}}<tool_call|><|tool_response>"
        return all(matcher.consume_token(t) for t in tokens(call)) and matcher.is_accepting()

    assert takes("Lyon") and takes("Paris")
    assert not takes("Lyon, France") and not takes("L")


def test_a_number_holds_its_schemas_bounds_and_has_at_most_sixteen_digits_without() -> None:
    """Unbounded, a random-weight model wrote `a:-5555…` until max_tokens under `minimum: 0`."""
    family = gemma()
    add = ToolSpec("add", "", json.dumps({"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "integer", "minimum": 0, "maximum": 99}, "b": {"type": "number"}}}))
    constraint = whole_answer(family.output.tools, (add,), "add", False, dict(family.output.special_tokens))

    def takes(a: str, b: str) -> bool:
        matcher = LLMatcher(family.llguidance, grammar_for(constraint), log_level=0)
        call = f"<|tool_call>call:add{{a:{a},b:{b}}}<tool_call|><|tool_response>"
        return all(matcher.consume_token(t) for t in tokens(call)) and matcher.is_accepting()

    assert takes("0", "-2.5") and takes("99", "1e3") and takes("7", "9" * 16)
    assert not takes("-5", "1") and not takes("100", "1") and not takes("5", "9" * 17)

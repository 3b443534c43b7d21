"""Qwen3-Coder's XML calls: read back as typed JSON arguments while streaming, and written under the
tool's schema (the fixture's real Qwen3 vocabulary and Qwen3-Coder template)."""

from __future__ import annotations

import json

import pytest
from llguidance import LLMatcher

from engine.constraints.grammar import grammar_for
from engine.parsing.call_grammar import whole_answer
from engine.parsing.stream import OutputParser
from engine.protocol import ToolSpec
from tests.families.test_markers import allowed_first
from tests.families.vocab_view import family_vocabulary

BOOK = ToolSpec("book", "Book a table.", json.dumps({
    "type": "object", "required": ["place", "seats"],
    "properties": {"place": {"type": "string"}, "seats": {"type": "integer"}, "outside": {"type": "boolean"},
                   "notes": {"type": "object"}}}))


def call(*parameters: tuple[str, str]) -> str:
    body = "".join(f"<parameter={key}>\n{value}\n</parameter>\n" for key, value in parameters)
    return f"<tool_call>\n<function=book>\n{body}</function>\n</tool_call>"


def parsed(text: str, piece: int) -> tuple[str, list[tuple[str, dict]]]:
    family = family_vocabulary("qwen3_coder")
    parser = OutputParser(family.output, family.output.tools, False, (BOOK,))
    for start in range(0, len(text), piece):
        parser.feed(text[start : start + piece])
    parser.finish()
    return parser.answer, [(c.name, json.loads(c.arguments)) for c in parser.calls]


@pytest.mark.parametrize("piece", [1, 7, 10_000])
def test_values_are_typed_by_the_schema_however_the_text_streams(piece: int) -> None:
    text = "Booking.\n" + call(("place", "Chez\nMoi 42"), ("seats", "4"), ("outside", "true"),
                                ("notes", '{"cake": 1}'))
    answer, calls = parsed(text, piece)
    assert answer.strip() == "Booking."
    assert calls == [("book", {"place": "Chez\nMoi 42", "seats": 4, "outside": True, "notes": {"cake": 1}})]


def test_a_string_parameter_that_looks_like_a_number_stays_a_string() -> None:
    assert parsed(call(("place", "42"), ("seats", "2")), 5)[1] == [("book", {"place": "42", "seats": 2})]


def accepts(text: str, tool: ToolSpec = BOOK) -> bool:
    family = family_vocabulary("qwen3_coder")
    constraint = whole_answer(family.output.tools, (tool,), "book", False, dict(family.output.special_tokens))
    matcher = LLMatcher(family.llguidance, grammar_for(constraint), log_level=0)
    specials = dict(family.output.special_tokens)
    inner = text.removeprefix("<tool_call>").removesuffix("</tool_call>")
    tokens = [specials["<tool_call>"], *family.tokens(inner), specials["</tool_call>"]]
    return all(matcher.consume_token(token) for token in tokens) and matcher.is_accepting()


def test_the_grammar_takes_the_schemas_calls_and_refuses_others() -> None:
    assert accepts(call(("place", "Chez Moi"), ("seats", "4")))  # the optional ones left out
    assert accepts(call(("place", "a\nb"), ("seats", "2"), ("outside", "false")))
    assert not accepts(call(("seats", "4")))  # the required place is missing
    assert not accepts(call(("place", "x"), ("seats", "four")))  # not an integer
    assert not accepts(call(("place", "x"), ("seats", "1"), ("colour", "red")))  # not a parameter


def test_a_value_at_its_longest_goes_on_to_its_closing_tag() -> None:
    """Not to the end of the turn: with llguidance's `stop=` a value that reached maxLength could only be
    ended by an end-of-generation token, and the call came back finished with no arguments."""
    family = family_vocabulary("qwen3_coder")
    tool = ToolSpec("book", "", json.dumps({"type": "object", "required": ["place"],
                                            "properties": {"place": {"type": "string", "maxLength": 4}}}))
    constraint = whole_answer(family.output.tools, (tool,), "book", False, dict(family.output.special_tokens))
    matcher = LLMatcher(family.llguidance, grammar_for(constraint), log_level=0)
    for token in [family.id_of("<tool_call>"), *family.tokens("\n<function=book>\n<parameter=place>\nChez")]:
        assert matcher.consume_token(token)
    allowed = allowed_first(family, matcher)
    assert family.id_of("<|im_end|>") not in allowed and family.id_of("<|endoftext|>") not in allowed
    assert allowed == {family.tokens("\n")[0]}


def test_a_string_value_holds_its_schemas_length_and_choices() -> None:
    """Raw text, but not free of the schema: a value that could run on would be written until max_tokens."""
    tool = ToolSpec("book", "", json.dumps({"type": "object", "required": ["place", "seats"], "properties": {
        "place": {"type": "string", "minLength": 2, "maxLength": 8}, "seats": {"type": "integer"},
        "by": {"enum": ["car", "foot"], "type": "string"}}}))
    assert accepts(call(("place", "Chez\nMoi"), ("seats", "4"), ("by", "foot")), tool)
    assert not accepts(call(("place", "Chez Moi 42"), ("seats", "4")), tool)  # over maxLength
    assert not accepts(call(("place", "C"), ("seats", "4")), tool)  # under minLength
    assert not accepts(call(("place", "Chez"), ("seats", "4"), ("by", "bus")), tool)  # not one of the enum

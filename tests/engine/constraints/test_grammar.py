"""Constraints turned into grammars without a model: what compiles, and the errors that name what is wrong."""

from __future__ import annotations

import json

import pytest

from engine.constraints import ConstraintError, check, grammar_for
from engine.protocol import Constraint
from tests.engine.constraints.schemas import SCHEMAS


def schema(value: object) -> Constraint:
    return Constraint("json_schema", json.dumps(value))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_test_schema_compiles(name: str) -> None:
    check(schema(SCHEMAS[name]))


@pytest.mark.parametrize("constraint", [
    Constraint("json_object"),
    Constraint("regex", "[0-9]{3}-[a-z]+"),
    Constraint("lark", 'start: "yes" | "no"'),
    Constraint("gbnf", 'root ::= "yes" | "no" | digit+\ndigit ::= [0-9]'),
], ids=["json_object", "regex", "lark", "gbnf"])
def test_every_kind_compiles(constraint: Constraint) -> None:
    assert grammar_for(constraint)


@pytest.mark.parametrize(("value", "keyword"), [
    ({"type": "object", "not": {"type": "string"}}, "not"),
    ({"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "uniqueItems"),
    ({"type": "object", "dependentRequired": {"a": ["b"]}}, "dependentRequired"),
    ({"type": "string", "format": "no-such-format"}, "format"),
    ({"type": "strnig"}, "type"),  # not a valid JSON Schema at all
    ({"type": "string", "maxLength": -1}, "maxLength"),
])
def test_an_unusable_schema_names_its_keyword(value: object, keyword: str) -> None:
    with pytest.raises(ConstraintError) as raised:
        check(schema(value))
    assert raised.value.keyword == keyword
    assert keyword in str(raised.value)


@pytest.mark.parametrize(("constraint", "words"), [
    (Constraint("json_schema", "{not json"), "not valid JSON"),
    (Constraint("json_schema", "[1, 2]"), "is an object"),
    (Constraint("json_schema", '{"$ref": "#/$defs/missing"}'), "missing"),
    (Constraint("regex", "[0-9"), "unclosed character class"),
    (Constraint("lark", "start: foo"), "foo"),
    (Constraint("gbnf", "root ::= undefined-rule"), "undefined-rule"),
], ids=["json", "not-an-object", "ref", "regex", "lark", "gbnf"])
def test_a_broken_constraint_says_what_is_wrong(constraint: Constraint, words: str) -> None:
    with pytest.raises(ConstraintError, match=words):
        check(constraint)


def test_the_same_constraint_is_compiled_once() -> None:
    constraint = schema({"type": "object", "properties": {"once": {"type": "integer"}}})
    grammar_for.cache_clear()
    first = grammar_for(constraint)
    assert grammar_for(Constraint("json_schema", constraint.source)) is first
    assert grammar_for.cache_info().hits == 1

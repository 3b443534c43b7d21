"""A protocol.Constraint as an llguidance grammar, checked, with an error that names what is wrong.

JSON is written compactly with Python's separators (`{"a": 1, "b": [2, 3]}`) and no other
whitespace: a model cannot spend its tokens on blank lines inside an object, and a closed object
is the end of the answer.
"""

from __future__ import annotations

import functools
import json
import re
from typing import TYPE_CHECKING, Any

from llguidance import LLMatcher, grammar_from

from engine.protocol import Constraint

if TYPE_CHECKING:
    from llguidance._lib import JsonCompileOptions

JSON_OPTIONS: JsonCompileOptions = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
_UNIMPLEMENTED = re.compile(r"Unimplemented keys: \[(.*?)\]")
_KIND_NAMES = {"json_schema": "JSON Schema", "json_object": "JSON object", "regex": "regular expression",
               "lark": "Lark grammar", "gbnf": "GBNF grammar"}


class ConstraintError(ValueError):
    """A constraint that cannot be used. `keyword` names the JSON Schema keyword at fault where there
    is one ("not", "uniqueItems", "format"); the message says what is wrong for a person (the API
    answers it as a 400 naming its field)."""

    def __init__(self, message: str, keyword: str = "") -> None:
        super().__init__(message)
        self.keyword = keyword


def check(constraint: Constraint) -> None:
    """Raise ConstraintError unless `constraint` compiles (no tokenizer needed)."""
    grammar_for(constraint)


@functools.lru_cache(maxsize=256)
def grammar_for(constraint: Constraint) -> str:
    """The llguidance grammar of `constraint`, checked; the same constraint is compiled once."""
    grammar = _grammar(constraint)
    error = LLMatcher.validate_grammar(grammar)
    if error:
        raise _error(constraint, error)
    return grammar


def _grammar(constraint: Constraint) -> str:
    kind, source = constraint.kind, constraint.source
    if kind == "json_schema":
        return LLMatcher.grammar_from_json_schema(json.dumps(_schema(source)), defaults=JSON_OPTIONS)
    if kind == "json_object":
        return LLMatcher.grammar_from_json_schema('{"type": "object"}', defaults=JSON_OPTIONS)
    if kind == "regex":
        return LLMatcher.grammar_from_regex(source)
    if kind == "lark":
        return LLMatcher.grammar_from_lark(source)
    if kind == "gbnf":
        try:
            return grammar_from("gbnf", source)
        except ValueError as error:  # the converter's own message: "Rule 'foo' not found" ...
            raise ConstraintError(f"The GBNF grammar is not valid: {error}".replace(
                "Failed to convert the grammar from GBNF to Lark: ", "")) from None
    raise ConstraintError(f"Unknown constraint kind {kind!r}: use one of {', '.join(_KIND_NAMES)}.")


def _schema(source: str) -> Any:
    try:
        schema = json.loads(source)
    except json.JSONDecodeError as error:
        raise ConstraintError(f"The JSON Schema is not valid JSON: {error}") from None
    if not isinstance(schema, (dict, bool)):
        raise ConstraintError(f"A JSON Schema is an object, not {type(schema).__name__}.")
    _check_schema(schema)
    return schema


def _check_schema(schema: Any) -> None:
    """The schema against the JSON Schema meta-schema of its draft (2020-12 where it names none)."""
    from jsonschema import exceptions, validators

    validator = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except exceptions.SchemaError as error:
        where = error.json_path.replace("$", "the schema", 1)
        keyword = str(error.path[-1]) if error.path else str(error.validator)
        raise ConstraintError(f"Not a valid JSON Schema: {error.message} (at {where})", keyword) from None


def _error(constraint: Constraint, message: str) -> ConstraintError:
    name = _KIND_NAMES[constraint.kind]
    unimplemented = _UNIMPLEMENTED.search(message)
    if unimplemented:
        keys = [key.strip().strip('"') for key in unimplemented.group(1).split(",")]
        return ConstraintError(
            f"The JSON Schema uses {', '.join(repr(k) for k in keys)}, which constrained decoding does not "
            "support (supported: type, properties, required, additionalProperties, items, enum, const, anyOf, "
            "oneOf, allOf, $ref/$defs, minItems/maxItems, minLength/maxLength, pattern, format, minimum/maximum).",
            keys[0])
    if message.startswith("Unknown format"):
        return ConstraintError(f"The JSON Schema's {message[0].lower()}{message[1:]}", "format")
    return ConstraintError(f"The {name} cannot be used: {message.strip()}")

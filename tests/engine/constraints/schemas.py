"""Ten JSON Schemas bounded so that any walk through them ends: every string has a maxLength, a pattern
or a format, every array a maxItems, every integer a range. A sampled answer that runs into
max_new_tokens is then a failure of the constraint, not of the model."""

from __future__ import annotations

import datetime
import json
import re
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker

NAME = {"type": "string", "maxLength": 12}
SCHEMAS: dict[str, dict[str, Any]] = {
    "person": {
        "type": "object", "properties": {"name": NAME, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
        "required": ["name", "age"], "additionalProperties": False},
    "nested": {
        "type": "object", "additionalProperties": False, "required": ["user", "active"],
        "properties": {
            "user": {"type": "object", "additionalProperties": False, "required": ["id", "tags"], "properties": {
                "id": {"type": "integer", "minimum": 1, "maximum": 9999},
                "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3}}},
            "active": {"type": "boolean"}}},
    "colours": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "minItems": 1, "maxItems": 4},
    "any_of": {
        "type": "object", "additionalProperties": False, "required": ["value"],
        "properties": {"value": {"anyOf": [{"type": "integer", "minimum": -50, "maximum": 50},
                                           {"type": "string", "maxLength": 8}, {"type": "null"}]}}},
    "refs": {
        "$defs": {"point": {"type": "object", "additionalProperties": False, "required": ["x", "y"],
                            "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 99},
                                           "y": {"type": "integer", "minimum": 0, "maximum": 99}}}},
        "type": "object", "additionalProperties": False, "required": ["start", "end"],
        "properties": {"start": {"$ref": "#/$defs/point"}, "end": {"$ref": "#/$defs/point"}}},
    "pattern": {
        "type": "object", "additionalProperties": False, "required": ["code"],
        "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{3}$"}}},
    "dates": {
        "type": "object", "additionalProperties": False, "required": ["day", "at"],
        "properties": {"day": {"type": "string", "format": "date"}, "at": {"type": "string", "format": "date-time"}}},
    "contact": {
        "type": "object", "additionalProperties": False, "required": ["email", "id"],
        "properties": {"email": {"type": "string", "format": "email", "maxLength": 24},
                       "id": {"type": "string", "format": "uuid"}}},
    "enum_const": {
        "type": "object", "additionalProperties": False, "required": ["kind", "level", "label"],
        "properties": {"kind": {"const": "note"}, "level": {"enum": [1, 2, 3]}, "label": {"enum": ["low", "high"]},
                       "score": {"type": "number", "minimum": 0, "maximum": 10}}},
    "todo_list": {
        "type": "object", "additionalProperties": False, "required": ["items"],
        "properties": {"items": {"type": "array", "maxItems": 3, "items": {
            "type": "object", "additionalProperties": False, "required": ["title", "done"],
            "properties": {"title": {"type": "string", "maxLength": 10}, "done": {"type": "boolean"}}}}}},
}

FORMATS = FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def _date_time(value: object) -> bool:
    """RFC 3339 (jsonschema checks date-time only with an extra package): the standard library reads it once
    the letters are upper case and a leap second (:60, which RFC 3339 allows) is read as :59."""
    if not isinstance(value, str):
        return True
    if not re.fullmatch(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)", value):
        raise ValueError(f"{value!r} is not RFC 3339")
    text = re.sub(r"(T\d\d:\d\d:)60", r"\g<1>59", value.upper().replace("Z", "+00:00"))
    return bool(datetime.datetime.fromisoformat(text))


def errors(name: str, text: str) -> list[str]:
    """Why `text` is not a JSON document valid against schema `name` (empty: it is)."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        return [f"not JSON: {error}: {text!r}"]
    validator = Draft202012Validator(SCHEMAS[name], format_checker=FORMATS)
    return [f"{error.message} in {text!r}" for error in validator.iter_errors(document)]


def prompt_text(name: str) -> str:
    return f"Answer with a JSON document matching this schema: {json.dumps(SCHEMAS[name])}"

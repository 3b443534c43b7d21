"""Gemma 4's tool calls: `<|tool_call>call:NAME{key:value,…}<tool_call|>`, arguments in Gemma's notation.

Keys stand bare, strings are wrapped in the `<|"|>` token, numbers, booleans, lists and objects are
written as in JSON. `GemmaCall` reads a call's body as it streams and hands on its arguments as JSON
text; `gemma_rules` writes the Lark rules of a tool's arguments in that notation from its JSON Schema,
so that a constrained call is exactly what the template renders.
"""

from __future__ import annotations

import json
from typing import Any

QUOTE = '<|"|>'
LITERALS = ("true", "false", "null")


class GemmaCall:
    """One call after `<|tool_call>call:`, fed text until its arguments' closing brace."""

    def __init__(self) -> None:
        self._buffer = ""
        self.name: str | None = None
        self._depth = 0
        self._in_string = False
        self._word = ""
        self._out = ""
        self.done = False

    def feed(self, text: str) -> None:
        self._buffer += text
        if self.name is None:
            at = self._buffer.find("{")
            if at < 0:
                return
            self.name, self._buffer = self._buffer[:at].strip(), self._buffer[at:]
        while self._buffer and not self.done:
            if not self._step():
                return

    def _step(self) -> bool:
        buffer = self._buffer
        if buffer.startswith(QUOTE):
            self._flush(False)
            self._out += '"'
            self._in_string, self._buffer = not self._in_string, buffer[len(QUOTE) :]
            return True
        if QUOTE.startswith(buffer):
            return False  # may be the start of <|"|>
        char, self._buffer = buffer[0], buffer[1:]
        if self._in_string:
            self._out += json.dumps(char)[1:-1]
        elif char in "{[":
            self._depth += 1
            self._out += char
        elif char in "}],:":
            self._flush(char == ":")
            self._out += {",": ", ", ":": ": "}.get(char, char)
            self._depth -= char in "}]"
            self.done = self._depth == 0
        elif not char.isspace():
            self._word += char
        return True

    def _flush(self, is_key: bool) -> None:
        word, self._word = self._word, ""
        if not word:
            return
        bare = not is_key and (word in LITERALS or _is_number(word))
        self._out += word if bare else json.dumps(word)

    def take_arguments(self) -> str:
        text, self._out = self._out, ""
        return text

    @property
    def leftover(self) -> str:
        return self._buffer


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- the grammar of the notation


def gemma_rules(rule: str, schema: Any, quote: str) -> list[str]:
    """Lark rules for a value of `schema` written as Gemma writes it; `quote` is the Lark of `<|"|>`."""
    rules: list[str] = []
    _value(rule, schema if isinstance(schema, dict) else {}, quote, rules, bare_keys=True)
    return rules


def _value(rule: str, schema: dict[str, Any], quote: str, rules: list[str], bare_keys: bool = True) -> None:
    kind = schema.get("type")
    if "enum" in schema:
        choices = [_literal_of(value, quote) for value in schema["enum"]]
        rules.append(f"{rule}: {' | '.join(choices)}")
    elif "const" in schema:
        rules.append(f"{rule}: {_literal_of(schema['const'], quote)}")
    elif kind == "object" or "properties" in schema:
        _object(rule, schema, quote, rules)
    elif kind == "array":
        items = schema.get("items")
        _value(f"{rule}_i", items if isinstance(items, dict) else {}, quote, rules)
        rules.append(f'{rule}: "[" ({rule}_i ("," {rule}_i)*)? "]"')
    elif kind == "string":
        rules.append(f"{rule}: {quote} /[^\\x00]{_length(schema)}/ {quote}")
    elif kind in ("integer", "number"):
        rules.append(f"{rule}: {_number(kind, schema)}")
    elif kind == "boolean":
        rules.append(f'{rule}: "true" | "false"')
    elif kind == "null":
        rules.append(f'{rule}: "null"')
    else:
        _any(rule, quote, rules)


def _number(kind: str, schema: dict[str, Any]) -> str:
    """A number as JSON writes it, held to its schema's bounds (llguidance's JSON numbers); with none, to
    16 digits a part, as llama.cpp's schema grammars do: unbounded, a model may write digits until
    max_tokens, and the cut call is lost."""
    bounds = {key: schema[key] for key in _NUMBER_BOUNDS if isinstance(schema.get(key), (int, float))}
    if bounds:
        return f"%json {json.dumps({'type': kind, **bounds})}"
    whole = "-?(0|[1-9][0-9]{0,15})"
    return f"/{whole}/" if kind == "integer" else f"/{whole}(\\.[0-9]{{1,16}})?([eE][-+]?[0-9]{{1,3}})?/"


_NUMBER_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")


def _length(schema: dict[str, Any]) -> str:
    """A string's minLength / maxLength as a regex repeat: unbounded, a model may write one string until
    max_tokens, and the cut call is lost."""
    least, most = schema.get("minLength", 0), schema.get("maxLength")
    least = least if isinstance(least, int) else 0
    return f"{{{least},{most}}}" if isinstance(most, int) else f"{{{least},}}" if least else "*"


def _object(rule: str, schema: dict[str, Any], quote: str, rules: list[str]) -> None:
    """The schema's properties, keys sorted as the template writes them; the required ones always, each
    optional one at most once, commas between those written."""
    found = schema.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    required = set(schema.get("required") or ())
    items = []
    for number, key in enumerate(sorted(properties)):
        _value(f"{rule}_p{number}", properties[key] if isinstance(properties[key], dict) else {}, quote, rules)
        items.append((key in required, f'"{key}:" {rule}_p{number}'))
    # {rule}_f{i}: the items from i on, none written before them (no comma before the first written)
    for index in range(len(items), -1, -1):
        if index == len(items):
            rules.append(f'{rule}_f{index}: ""')
            continue
        needed, text = items[index]
        after = " ".join(f'"," {t}' if n else f'("," {t})?' for n, t in items[index + 1 :])
        written = f"{text} {after}".strip()
        rules.append(f"{rule}_f{index}: {written}" if needed else f"{rule}_f{index}: {written} | {rule}_f{index + 1}")
    rules.append(f'{rule}: "{{" {rule}_f0 "}}"')


def _any(rule: str, quote: str, rules: list[str]) -> None:
    rules.append(f"{rule}: {quote} /[^\\x00]*/ {quote} | /-?[0-9][0-9.eE+-]*/ | \"true\" | \"false\" | \"null\"")


def _literal_of(value: Any, quote: str) -> str:
    if isinstance(value, str):
        return f"{quote} {json.dumps(value)} {quote}"
    return json.dumps(json.dumps(value))

"""Tool calls that always parse: an llguidance Lark grammar of a call in the model's own format.

tool_choice "required" or a tool's name: the answer is the call(s) from its first token
(`whole_answer`). "auto": free text stays free; when the parser sees the model open a call the rest
of that call is constrained (`after_open`, installed from the next token, as llama-server's grammar
triggers do), so a started call still always parses and its arguments match the tool's schema.
Each call's object is `{name_key: "<the name>", arguments_key: <the tool's parameters schema>}`
(name first, so the call can stream as soon as it starts). A marker that is one special token of the
vocabulary (Qwen's `<tool_call>`, Llama's `<|python_tag|>`, Mistral's `[TOOL_CALLS]` and `[ARGS]`,
harmony's `<|channel|>`) is named in the grammar by its token id, so the model writes that token, as
it was trained to: as a quoted literal it could only be spelled in pieces, since llguidance keeps
special tokens out of text. The other markers, and the text around special ones, are literals.
After the last call the grammar ends, and a finished constraint ends the turn. Parallel calls stop at
MAX_CALLS_PER_TURN (a small model left free repeats its call until max_tokens); without parallel calls
the grammar is one call.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from engine.constraints.grammar import JSON_OPTIONS
from engine.parsing.formats import ToolCallFormat
from engine.parsing.gemma_call import QUOTE, gemma_rules
from engine.protocol import Constraint, ToolSpec

# Around the markers: a little, never unbounded (a model left a free run of whitespace may write only
# that until max_tokens, as the random-weight family fixtures did under "required")
WHITESPACE = r"/[ \t\r\n]{0,4}/"
MAX_CALLS_PER_TURN = 8  # parallel calls one answer may make; the scheduler stops a free turn there too


Specials = Mapping[str, int]  # marker text -> its special token's id (OutputFormat.special_tokens)


def whole_answer(call_format: ToolCallFormat, tools: Sequence[ToolSpec], choice: str, parallel: bool,
                 specials: Specials | None = None) -> Constraint:
    """The whole answer is one call (or several where `parallel`), each opened by its marker."""
    return _start(call_rules(call_format, tools, choice, parallel, specials))


def after_open(call_format: ToolCallFormat, tools: Sequence[ToolSpec], choice: str, parallel: bool,
               specials: Specials | None = None) -> Constraint:
    """What follows an opening marker the model has just written: the rest of the call(s)."""
    return _start(call_rules(call_format, tools, choice, parallel, specials, opened=True))


def call_rules(call_format: ToolCallFormat, tools: Sequence[ToolSpec], choice: str, parallel: bool,
               specials: Specials | None = None, opened: bool = False) -> list[str]:
    """The Lark rules of the call(s), `calls` the top one: for grammars that hold more than calls
    (engine/parsing/answer_grammar.py)."""
    return _rules(call_format, chosen(tools, choice), parallel, opened, specials or {})


def _start(rules: list[str]) -> Constraint:
    return Constraint("lark", "\n".join(["start: calls", *rules]) + "\n")


def chosen(tools: Sequence[ToolSpec], choice: str) -> Sequence[ToolSpec]:
    """The tools a call may name under `choice`: the named one, else all."""
    named = [spec for spec in tools if spec.name == choice]
    return named or tools


def _rules(call_format: ToolCallFormat, tools: Sequence[ToolSpec], parallel: bool, opened: bool,
           specials: Specials) -> list[str]:
    rules = [f"body: {' | '.join(f'body_{i}' for i in range(len(tools)))}"]
    for index, spec in enumerate(tools):
        if call_format.style == "xml":
            rules += xml_rules(f"body_{index}", spec.name, _parameters(spec))
        elif call_format.style == "gemma":
            arguments = gemma_rules(f"body_{index}_a", _parameters(spec), literal(QUOTE, specials))
            rules += [f"body_{index}: {literal(spec.name)} body_{index}_a", *arguments]
        else:
            rules.append(f"body_{index}: {_body(call_format, spec, specials)}")
    # harmony's <|call|> is an end-of-generation token: the finished grammar ends the turn instead
    close = "" if call_format.family == "harmony" else literal(call_format.close, specials)
    open_marker = literal(call_format.open, specials)
    if call_format.style == "json_array":
        calls = f'"[" body ({literal(", ")} body){_more()} "]"' if parallel else '"[" body "]"'
        first = f"{WHITESPACE} {calls}" if opened else f"{WHITESPACE} {open_marker} {WHITESPACE} {calls}"
        return [f"calls: {first}", *rules]
    # the name follows a name_args marker at once (harmony's `to=functions.NAME`, Mistral's `[TOOL_CALLS]NAME`)
    lead = "" if call_format.style == "name_args" else f"{WHITESPACE} "
    rest = f"{lead}body {WHITESPACE} {close}" if close else f"{lead}body"  # nothing after the last
    call = f"{open_marker} {rest}"
    wrapper_open, wrapper_close = literal(call_format.calls_open, specials), literal(call_format.calls_close, specials)
    first = rest if opened else f"{WHITESPACE} {wrapper_open} {call}"
    separator = literal(call_format.separator, specials)
    more = f" ({separator} call){_more()}" if parallel and call_format.parallel else ""
    end = f" {WHITESPACE} {wrapper_close}" if wrapper_close else ""
    return [f"calls: {first}{more}{end}", f"call: {call}", *rules]


def _more() -> str:
    """How many calls may follow the first."""
    return f"{{0,{MAX_CALLS_PER_TURN - 1}}}"


def _body(call_format: ToolCallFormat, spec: ToolSpec, specials: Specials) -> str:
    arguments = _parameters(spec)
    if call_format.style == "name_args":
        marker = literal(call_format.args_marker, specials)
        return f"{literal(spec.name)} {marker} %json {json.dumps(strict(arguments))}"
    schema = {"type": "object", "properties": {call_format.name_key: {"const": spec.name},
                                               call_format.arguments_key: arguments},
              "required": [call_format.name_key, call_format.arguments_key], "additionalProperties": False}
    return f"%json {json.dumps(strict(schema))}"


def xml_rules(rule: str, name: str, parameters: dict[str, Any]) -> list[str]:
    """Qwen3-Coder's call body: `<function=NAME>`, each parameter in the schema's order (the required ones
    always, the others optional), `</function>`. A string value is raw text up to its closing tag, held
    to its schema's length or choices (a lazy rule with the tag as its suffix: with `stop=` the end of
    generation would end it too, and at maxLength nothing else could); any other value is JSON of its own
    schema."""
    found = parameters.get("properties")
    properties: dict[str, Any] = found if isinstance(found, dict) else {}
    required = set(parameters.get("required") or ())
    parts, rules = [], []
    for number, (key, schema) in enumerate(properties.items()):
        value = f"{rule}_v{number}"
        if isinstance(schema, dict) and schema.get("type") == "string":
            rules.append(f'{value}[suffix={json.dumps(chr(10) + "</parameter>" + chr(10))}]: {_xml_text(schema)}')
            parameter = f"{literal(f'<parameter={key}>' + chr(10))} {value}"
        else:
            sub = schema if isinstance(schema, dict) else {}
            rules.append(f"{value}: %json {json.dumps(strict(sub))}")
            parameter = f"{literal(f'<parameter={key}>' + chr(10))} {value} {literal(chr(10) + '</parameter>' + chr(10))}"
        parts.append(parameter if key in required else f"({parameter})?")
    body = " ".join([literal(f"<function={name}>" + "\n"), *parts, literal("</function>")])
    return [f"{rule}: {body}", *rules]


def _xml_text(schema: dict[str, Any]) -> str:
    """A string parameter's raw text, held to its schema's enum / const and length: unbounded, a model may
    write one value until max_tokens (what the random-weight fixtures did), and the cut call is lost."""
    choices = [schema["const"]] if "const" in schema else schema.get("enum")
    if isinstance(choices, list) and choices and all(isinstance(choice, str) for choice in choices):
        return " | ".join(json.dumps(choice) for choice in choices)
    least, most = schema.get("minLength", 0), schema.get("maxLength")
    if isinstance(least, int) and isinstance(most, int):
        return f"/(.|\\n){{{least},{most}}}/"
    return f"/(.|\\n){{{least},}}/" if isinstance(least, int) and least else "/(.|\\n)*/"


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """Compact JSON, as the constraints write it (engine/constraints/grammar.py)."""
    return {**schema, "x-guidance": dict(JSON_OPTIONS)}


def _parameters(spec: ToolSpec) -> dict[str, Any]:
    try:
        parameters = json.loads(spec.parameters)
    except ValueError:
        parameters = None
    return closed(parameters) if isinstance(parameters, dict) else {"type": "object"}


_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES = ("items", "additionalProperties", "not")


def closed(schema: Any) -> Any:
    """`schema` with every object that lists its properties but says nothing of others closed to them, as
    llama.cpp's schema grammars read it: under JSON Schema's own default a call may add any key, and a
    model (every MCP tool's schema leaves the word out) writes one whose string runs to max_tokens, and
    the cut call is lost. allOf's parts, and an object beside allOf or $ref, are left open: each names
    only some of the whole's keys."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: closed(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [closed(sub) for sub in value]
        elif key in _SCHEMA_VALUES:
            out[key] = closed(value)
    if isinstance(schema.get("properties"), dict) and "allOf" not in schema and "$ref" not in schema:
        out.setdefault("additionalProperties", False)
    return out


def literal(text: str, specials: Specials | None = None) -> str:
    """`text` as a Lark sequence: its special tokens by id (`<[151657]>`), the text between them quoted."""
    pieces: list[str] = []
    rest = text
    while rest:
        found = [(rest.find(marker), marker) for marker in (specials or {}) if marker in rest]
        if not found:
            pieces.append(json.dumps(rest))
            break
        at, marker = min(found, key=lambda hit: (hit[0], -len(hit[1])))
        if at:
            pieces.append(json.dumps(rest[:at]))
        pieces.append(f"<[{(specials or {})[marker]}]>")
        rest = rest[at + len(marker) :]
    return " ".join(pieces)

"""Grammars for tool calls: the answer is a call (`required`, a named tool), or a call once the model opens one.

Built from the parser's description of a model's call format (engine/parsing/formats.py's
ToolCallFormat, read here through the ToolCallShape protocol so this lower layer imports nothing
above it) and each function's parameters schema. A call is `open` + body + `close`; the body is a
JSON object {name_key: the name, arguments_key: the arguments} (style "json"), a JSON array of those
("json_array"), or the name, `args_marker`, the arguments ("name_args"). The arguments always match
their function's schema (llguidance's %json inside a Lark grammar). Markers that are single special
tokens of the vocabulary are given by id (`special_tokens`): a grammar's quoted text never writes one.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Protocol, Sequence

from engine.constraints.grammar import ConstraintError
from engine.protocol import Constraint, ToolSpec


class ToolCallShape(Protocol):
    style: str
    open: str
    close: str
    name_key: str
    arguments_key: str
    separator: str
    args_marker: str
    extra_keys: tuple[str, ...]


def tool_call_constraint(shape: ToolCallShape, tools: Sequence[ToolSpec], choice: str = "required",
                         parallel: bool = True, special_tokens: Mapping[str, int] | None = None,
                         close_ends_turn: bool = False) -> Constraint:
    """The whole answer is tool calls: to any of `tools` ("required") or to the one named `choice`;
    several in a row where `parallel`. `close_ends_turn`: the close marker is an end-of-generation
    token (harmony's <|call|>), left to the end of the turn rather than written by the grammar."""
    chosen = _chosen(tools, choice)
    grammar = _Grammar(shape, chosen, special_tokens or {}, close_ends_turn)
    return Constraint("lark", grammar.text(parallel, opened=False))


def tool_call_body_constraint(shape: ToolCallShape, tools: Sequence[ToolSpec], parallel: bool = True,
                              special_tokens: Mapping[str, int] | None = None,
                              close_ends_turn: bool = False) -> Constraint:
    """For tool_choice "auto": what follows `shape.open` once the model has written it (install it with
    Sequence.constrain_next / Scheduler.constrain): the call's body and close, then further calls."""
    grammar = _Grammar(shape, _chosen(tools, "required"), special_tokens or {}, close_ends_turn)
    return Constraint("lark", grammar.text(parallel, opened=True))


def _chosen(tools: Sequence[ToolSpec], choice: str) -> list[ToolSpec]:
    if not tools:
        raise ConstraintError("A tool call grammar needs at least one tool.")
    if choice in ("required", "auto"):
        return list(tools)
    named = [tool for tool in tools if tool.name == choice]
    if not named:
        raise ConstraintError(f"tool_choice names {choice!r}, which is not among the tools "
                              f"({', '.join(tool.name for tool in tools)}).")
    return named


class _Grammar:
    def __init__(self, shape: ToolCallShape, tools: list[ToolSpec], special: Mapping[str, int],
                 close_ends_turn: bool) -> None:
        self.shape, self.tools, self.special = shape, tools, special
        self.close_ends_turn = close_ends_turn

    def text(self, parallel: bool, opened: bool) -> str:
        shape = self.shape
        close = "" if self.close_ends_turn else self._marker(shape.close)
        several = parallel and shape.style != "json_array"  # an array holds its own several calls
        start = "start: " + ("body " + close if opened else "call")
        rules = [start + (f" ({self._marker(shape.separator)} call)*" if several else ""), f"body: {self._body(parallel)}"]
        if several or not opened:
            rules.append(f"call: {self._marker(shape.open)} body {close}")
        if shape.style == "name_args":
            rules += [f"named_{index}: {json.dumps(tool.name)} {self._marker(shape.args_marker)} %json "
                      f"{json.dumps(_parameters(tool))}" for index, tool in enumerate(self.tools)]
        return "\n".join(rules)

    def _body(self, parallel: bool) -> str:
        shape = self.shape
        if shape.style == "name_args":
            return " | ".join(f"named_{index}" for index in range(len(self.tools)))
        calls: dict[str, Any] = {"anyOf": [self._call_object(tool) for tool in self.tools]}
        if shape.style == "json_array":
            calls = {"type": "array", "items": calls, "minItems": 1, **({} if parallel else {"maxItems": 1})}
        return f'"\\n"? %json {json.dumps(calls)} "\\n"?'

    def _call_object(self, tool: ToolSpec) -> dict[str, Any]:
        shape = self.shape
        properties: dict[str, Any] = {shape.name_key: {"const": tool.name}, shape.arguments_key: _parameters(tool)}
        for key in shape.extra_keys:  # Mistral's call id: nine letters and digits
            properties[key] = {"type": "string", "pattern": "^[a-zA-Z0-9]{9}$"}
        return {"type": "object", "properties": properties, "required": list(properties),
                "additionalProperties": False}

    def _marker(self, text: str) -> str:
        if not text:
            return ""
        if text in self.special:
            return f"<[{self.special[text]}]>"
        return json.dumps(text)


def _parameters(tool: ToolSpec) -> Any:
    try:
        schema = json.loads(tool.parameters or "{}")
    except json.JSONDecodeError as error:
        raise ConstraintError(f"The parameters of tool {tool.name!r} are not valid JSON: {error}") from None
    if not isinstance(schema, dict):
        raise ConstraintError(f"The parameters of tool {tool.name!r} are not a JSON Schema object.")
    return schema or {"type": "object"}

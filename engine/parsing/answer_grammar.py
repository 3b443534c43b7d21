"""The whole turn under one grammar: room to think first, then the answer the request asked for.

A constraint from the client (response_format's JSON Schema or JSON object) and the tool calls
hold the ANSWER, not the thinking. So the turn's grammar is, in order:
- the thinking block, optional (`<think>` free text `</think>`; harmony's analysis message), where
  the model has a thinking format and the thinking is not switched off; where the prompt itself
  opened the thinking (DeepSeek-R1 distills, QwQ) nothing constrains the turn until the thinking
  closes, and the answer's grammar is installed then (`after_thinking`);
- the answer: the client's schema; or the call(s) (tool_choice "required" / a name); or, with
  tools and a schema, a call OR the schema's answer (as llama-server and OpenAI allow); or, for
  families whose calls open without a marker of their own (Llama 3.x's bare JSON, harmony's
  commentary channel), a call OR free text, so that a call once begun is always written under its
  schema (a marker family's "auto" instead gets the call grammar when the parser sees the marker).
When `reasoning_budget` closes the thinking the engine writes the close itself (the grammar never
saw it): `after_thinking` is installed then, from the token after it.
A Lark or GBNF grammar, or a regex, from the client is not composed: it holds the answer as given
(deferred past a thinking the prompt opened), and tools do not apply under it.
"""

from __future__ import annotations

import json

from engine.parsing.call_grammar import WHITESPACE, Specials, call_rules, literal, strict
from engine.parsing.formats import ReasoningFormat
from engine.parsing.prompt import TurnSetup
from engine.protocol import Constraint

HARMONY_FINAL = "<|channel|>final<|message|>"
HARMONY_ANALYSIS = "<|channel|>analysis<|message|>"
HARMONY_NEXT = "<|end|><|start|>assistant"  # what ends the analysis and begins the next message
FREE_TEXT = r"/(.|\n)*/"
NOT_A_CALL = r"/[^{ \t\r\n](.|\n)*/"  # free text that cannot begin a bare JSON call


def turn_constraints(setup: TurnSetup, constraint: Constraint | None) -> tuple[Constraint | None, Constraint | None]:
    """(the constraint from the turn's first token, the one installed once the thinking is closed outside
    it); (constraint, None) where nothing here applies."""
    if constraint is not None and constraint.kind not in ("json_schema", "json_object"):
        return (None, constraint) if setup.in_reasoning else (constraint, None)
    answer = _answer(setup, constraint)
    if answer is None:
        return constraint, None
    rules, top = answer
    # after the engine closed the thinking; harmony's close then begins the next message and leaves
    # its header to this grammar (the commentary channel's call, or the final answer)
    after = _lark(top, rules)
    if setup.in_reasoning:
        return None, after
    thinking = _thinking(setup)
    if thinking is None:
        return _lark(top, rules), None
    expression, thinking_rules = thinking
    return _lark(f"(think {WHITESPACE})? {top}", [f"think: {expression}", *thinking_rules, *rules]), after


def _answer(setup: TurnSetup, constraint: Constraint | None) -> tuple[list[str], str] | None:
    """The answer's rules and top expression; None: the turn needs no grammar of its own."""
    specials = dict(setup.output.special_tokens)
    call_format, harmony = setup.tools, setup.output.harmony
    rules: list[str] = []
    choices: list[str] = []
    if call_format is not None and (setup.forced_call or constraint is not None or call_format.open == "" or harmony):
        rules += call_rules(call_format, setup.tool_specs, setup.tool_choice, setup.parallel_tool_calls, specials)
        choices.append("calls")
    if not (setup.forced_call and choices):
        body = _schema_body(constraint)
        if body is None and choices:  # a call or free text: a call once begun is written under its schema
            body = FREE_TEXT if harmony else NOT_A_CALL
        if body is not None:
            final = f"{literal(HARMONY_FINAL, specials)} " if harmony else ""
            rules += [f"response: {final}response_body", f"response_body: {body}"]
            choices.append("response")
    if not choices:
        return None
    return rules, choices[0] if len(choices) == 1 else f"({' | '.join(choices)})"


def _schema_body(constraint: Constraint | None) -> str | None:
    if constraint is None:
        return None
    if constraint.kind == "json_object":
        return f"%json {json.dumps(strict({'type': 'object'}))}"
    schema = json.loads(constraint.source)  # json_schema, checked by the caller (engine.constraints.check)
    return f"%json {json.dumps(strict(schema) if isinstance(schema, dict) else schema)}"


def _thinking(setup: TurnSetup) -> tuple[str, list[str]] | None:
    """The optional thinking block before the answer (a Lark expression and its rules); None: no room
    to think."""
    specials = dict(setup.output.special_tokens)
    reasoning = setup.output.reasoning
    if setup.thinking_off:
        return None
    if setup.output.harmony:
        return f"{literal(HARMONY_ANALYSIS, specials)} {FREE_TEXT} {literal(HARMONY_NEXT, specials)}", []
    if reasoning is None:
        return None
    return _inline_thinking(reasoning, specials)


def _inline_thinking(reasoning: ReasoningFormat, specials: Specials) -> tuple[str, list[str]]:
    opening = literal(reasoning.open, specials)
    close = reasoning.close
    if close.strip() in specials:  # a special token is never text: the free text ends where it comes
        return f"{opening} {FREE_TEXT} {literal(close, specials)}", []
    # a close that is text: the free text is lazy and stops at it (the close is written, and ends it)
    return f"{opening} thought", [f"thought[stop={json.dumps(close)}]: {FREE_TEXT}"]


def _lark(top: str, rules: list[str]) -> Constraint:
    return Constraint("lark", "\n".join([f"start: {top}", *rules]) + "\n")

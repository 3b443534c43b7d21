"""What every API's requests share on their way to the engine: tools, tool choice, JSON Schemas, histories.

OpenAI's chat completions, Anthropic's messages and the Responses API spell
tools, tool choices and output formats each their own way; once read they become
the same ToolSpec, tool choice and Constraint here, checked the same way, with a
400 that names the field in the caller's own spelling (`param`).
"""

from __future__ import annotations

import json
from typing import Any, Iterable

import jsonschema

from engine.protocol import ChatMessage, Constraint, ToolSpec
from engine.server.errors import ApiError

TOOL_CHOICES = ("auto", "none", "required")
EMPTY_PARAMETERS = {"type": "object", "properties": {}}


def bad(param: str, message: str) -> ApiError:
    return ApiError(400, f"'{param}': {message}", param=param)


def checked_schema(schema: Any, param: str) -> str:
    """The schema as JSON text, or a 400 when it is not a JSON Schema (its own meta-schema says)."""
    if not isinstance(schema, (dict, bool)):
        raise bad(param, f"a JSON Schema is an object, not {type(schema).__name__}.")
    validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        where = "/".join(str(part) for part in error.absolute_path)
        raise bad(param, f"not a valid JSON Schema{f' at {where!r}' if where else ''}: {error.message}") from None
    return json.dumps(schema, ensure_ascii=False)


def usable(constraint: Constraint, param: str) -> Constraint:
    """The constraint if constrained decoding can follow it; else a 400 naming the field and the keyword."""
    from engine.constraints import ConstraintError, check  # llguidance loads with the first request that needs it

    try:
        check(constraint)
    except ConstraintError as error:
        keyword = f" (keyword {error.keyword!r})" if error.keyword else ""
        raise ApiError(400, f"'{param}'{keyword}: {error}", param=param, code="unsupported_schema") from None
    return constraint


def tool_spec(name: Any, description: Any, parameters: Any, param: str) -> ToolSpec:
    """One function tool, checked: a name, and parameters that are a JSON Schema constrained decoding
    can follow, since a required call's arguments are written under it (none: no arguments)."""
    if not isinstance(name, str) or not name.strip():
        raise bad(f"{param}.name", "every tool needs a name.")
    if description is not None and not isinstance(description, str):
        raise bad(f"{param}.description", "the description is text.")
    schema = EMPTY_PARAMETERS if parameters is None else parameters
    return ToolSpec(name, description or "", json_schema_constraint(schema, f"{param}.parameters").source)


def unique_tools(tools: Iterable[ToolSpec], param: str) -> tuple[ToolSpec, ...]:
    specs = tuple(tools)
    names = [tool.name for tool in specs]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise bad(f"{param}[{index}].name", f"two tools are named {name!r}.")
    return specs


def tool_choice(choice: str, named: str | None, tools: tuple[ToolSpec, ...], param: str) -> str:
    """The engine's tool choice ("auto", "none", "required" or a tool's name), checked against the tools."""
    if named is not None:
        if named not in {tool.name for tool in tools}:
            have = ", ".join(repr(tool.name) for tool in tools) or "none"
            raise bad(param, f"there is no tool named {named!r} (the request's tools: {have}).")
        return named
    if choice not in TOOL_CHOICES:
        raise bad(param, f"{choice!r} is not a tool choice (auto, none, required, or a function by name).")
    if choice == "required" and not tools:
        raise bad(param, "'required' needs at least one tool in the request.")
    return choice


def parallel_calls(allowed: bool | None, choice: str) -> bool:
    """Whether one answer may make several calls: as the client says; unsaid, one call for a tool named
    in the tool choice (what OpenAI's models do: a named choice is a call to that tool), several otherwise."""
    if allowed is not None:
        return allowed
    return choice in TOOL_CHOICES


def json_schema_constraint(schema: Any, param: str) -> Constraint:
    return usable(Constraint("json_schema", checked_schema(schema, param)), param)


def template_option(name: str, value: Any) -> tuple[str, str]:
    """One chat-template variable as the engine takes it: its name and its value as JSON text."""
    return name, json.dumps(value, ensure_ascii=False)


def template_options(kwargs: dict[str, Any] | None, param: str, **extra: Any) -> tuple[tuple[str, str], ...]:
    """chat_template_kwargs and the fields that are template switches in disguise (reasoning_effort ...)."""
    options = dict(kwargs or {})
    for name in options:
        if not name.isidentifier():
            raise bad(f"{param}.{name}", "a template variable's name is a word (letters, digits, _).")
    options.update({name: value for name, value in extra.items() if value is not None})
    return tuple(template_option(name, value) for name, value in options.items())


def check_tool_results(messages: tuple[ChatMessage, ...], params: list[str]) -> tuple[ChatMessage, ...]:
    """Every tool message answers a call an earlier assistant message made; it gets that tool's name.

    `params[i]` names message i in the caller's spelling, for the 400."""
    calls: dict[str, str] = {}
    checked = []
    for message, param in zip(messages, params):
        calls.update({call.id: call.name for call in message.tool_calls})
        if message.role == "tool":
            if message.tool_call_id not in calls:
                known = ", ".join(repr(call) for call in calls) or "none"
                raise bad(param, f"this tool result answers call {message.tool_call_id!r}, which no earlier "
                          f"assistant message made (the calls so far: {known}).")
            if not message.name:
                message = ChatMessage("tool", message.content, tool_call_id=message.tool_call_id,
                                      name=calls[message.tool_call_id])
        checked.append(message)
    return tuple(checked)


def arguments_text(arguments: Any, param: str) -> str:
    """A call's arguments as JSON text of an object (OpenAI sends text, Anthropic an object)."""
    if isinstance(arguments, str):
        try:
            value = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            raise bad(param, "the arguments are not valid JSON.") from None
    else:
        value = arguments
    if not isinstance(value, dict):
        raise bad(param, "the arguments are a JSON object.")
    # as the client sent them where it sent text: the model's own spelling, which the cache may hold
    return arguments if isinstance(arguments, str) and arguments.strip() else json.dumps(value, ensure_ascii=False)

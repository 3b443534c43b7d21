"""Anthropic's Messages API request (POST /v1/messages), checked, as the engine's Submit.

A translation onto the same Submit as chat completions: `system` becomes the
first message, `tool_use` blocks an assistant's tool calls, `tool_result` blocks
tool messages, `thinking` blocks the assistant's reasoning; tools with
`input_schema` become ToolSpecs and `tool_choice` auto / any / tool / none the
engine's choice. `thinking` {"type": "enabled", "budget_tokens"} is the
thinking budget and turns the template's switch on; "disabled" turns it off.
`output_config.format` (structured outputs) is the constraint, its `effort` the
template's reasoning_effort. Sampling fields (temperature, top_p, top_k) are read
where a client sends them (newer anthropic clients pass them in extra_body).
"""

from __future__ import annotations

import json
from typing import Any, Literal, Union

from pydantic import ConfigDict, Field

from engine.images import ImageError, from_base64
from engine.protocol import ChatMessage, ImagePart, SamplingParams, Submit, ToolCall, ToolSpec
from engine.server import tooling
from engine.server.schema import MAX_STOP_STRINGS, _Strict

AnthropicRole = Literal["user", "assistant"]


class Block(_Strict):
    type: str
    text: str | None = None
    id: str | None = None  # tool_use
    name: str | None = None
    input: Any = None
    tool_use_id: str | None = None  # tool_result
    content: Union[str, list["Block"], None] = None
    is_error: bool | None = None
    thinking: str | None = None  # thinking
    signature: str | None = None
    source: Any = None  # image: {"type": "base64", "media_type": "image/png", "data": "..."}


Block.model_rebuild()


class AnthropicMessage(_Strict):
    role: AnthropicRole
    content: Union[str, list[Block]]


class AnthropicTool(_Strict):
    name: str
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    type: str | None = None  # "custom" or absent: a client tool; server tools (web search ...) are not ours


class AnthropicToolChoice(_Strict):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class Thinking(_Strict):
    type: Literal["enabled", "disabled", "adaptive"]
    budget_tokens: int | None = Field(default=None, ge=0)


class OutputFormat(_Strict):
    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)
    type: Literal["json_schema"]
    schema_: Any = Field(alias="schema")


class OutputConfig(_Strict):
    """Anthropic's structured outputs (`format`) and effort, which templates with a switch read."""

    effort: str | None = None
    format: OutputFormat | None = None


class MessagesRequest(_Strict):
    model: str | None = None
    max_tokens: int = Field(ge=1)
    messages: list[AnthropicMessage] = Field(min_length=1)
    system: Union[str, list[Block], None] = None
    stop_sequences: list[str] | None = Field(default=None, max_length=MAX_STOP_STRINGS)
    temperature: float | None = Field(default=None, ge=0.0, le=1.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: int | None = Field(default=None, ge=0)
    stream: bool = False
    tools: list[AnthropicTool] | None = None
    tool_choice: AnthropicToolChoice | None = None
    thinking: Thinking | None = None
    output_config: OutputConfig | None = None
    metadata: Any = None


def messages_submit(chat_id: str, request: MessagesRequest) -> Submit:
    tools = _tools(request.tools or [])
    choice, parallel = _tool_choice(request.tool_choice, tools)
    thinking = request.thinking
    budget = thinking.budget_tokens if thinking is not None and thinking.type == "enabled" else None
    given: dict[str, Any] = {name: getattr(request, name) for name in ("temperature", "top_p", "top_k")}
    output = request.output_config or OutputConfig()
    constraint = (tooling.json_schema_constraint(output.format.schema_, "output_config.format.schema")
                  if output.format is not None else None)
    sampling = SamplingParams(**{name: value for name, value in given.items() if value is not None},
                              repeat_penalty=1.0, max_new_tokens=request.max_tokens, constraint=constraint,
                              stop=tuple(s for s in request.stop_sequences or () if s), reasoning_budget=budget)
    switch = None if thinking is None or thinking.type == "adaptive" else thinking.type == "enabled"
    options = tooling.template_options(None, "thinking", enable_thinking=switch, reasoning_effort=output.effort)
    return Submit(chat_id, _messages(request), sampling, tools=tools, tool_choice=choice,
                  parallel_tool_calls=parallel, template_options=options)


def _tools(tools: list[AnthropicTool]) -> tuple[ToolSpec, ...]:
    specs = []
    for index, tool in enumerate(tools):
        if tool.type not in (None, "custom"):
            raise tooling.bad(f"tools[{index}].type", f"the server tool {tool.type!r} does not run here: "
                              "give client tools (name, description, input_schema) and run them yourself.")
        specs.append(tooling.tool_spec(tool.name, tool.description, tool.input_schema, f"tools[{index}]"))
    return tooling.unique_tools(specs, "tools")


def _tool_choice(choice: AnthropicToolChoice | None, tools: tuple[ToolSpec, ...]) -> tuple[str, bool]:
    if choice is None:
        return "auto", True
    disabled = choice.disable_parallel_tool_use
    allowed = None if disabled is None else not disabled
    if choice.type == "tool":
        if not choice.name:
            raise tooling.bad("tool_choice.name", 'a tool choice of type "tool" names the tool.')
        named = tooling.tool_choice("auto", choice.name, tools, "tool_choice.name")
        return named, tooling.parallel_calls(allowed, named)
    engine_choice = {"auto": "auto", "any": "required", "none": "none"}[choice.type]
    checked = tooling.tool_choice(engine_choice, None, tools, "tool_choice")
    return checked, tooling.parallel_calls(allowed, checked)


def _messages(request: MessagesRequest) -> tuple[ChatMessage, ...]:
    messages: list[ChatMessage] = []
    params: list[str] = []
    if request.system:
        messages.append(ChatMessage("system", _plain_text(request.system, "system")))
        params.append("system")
    for index, message in enumerate(request.messages):
        param = f"messages[{index}]"
        if isinstance(message.content, str):
            found = [(ChatMessage(message.role, message.content), param)]
        elif message.role == "assistant":
            found = [(_assistant(message.content, f"{param}.content"), param)]
        else:
            found = _user(message.content, f"{param}.content")
        messages.extend(item for item, _ in found)
        params.extend(where for _, where in found)
    return tooling.check_tool_results(tuple(messages), params)


def _assistant(blocks: list[Block], param: str) -> ChatMessage:
    texts, thoughts, calls = [], [], []
    for number, block in enumerate(blocks):
        where = f"{param}[{number}]"
        if block.type == "text":
            texts.append(block.text or "")
        elif block.type in ("thinking", "redacted_thinking"):
            thoughts.append(block.thinking or "")
        elif block.type == "tool_use":
            if not block.id or not block.name:
                raise tooling.bad(where, "a tool_use block has an id and a name.")
            calls.append(ToolCall(block.id, block.name, tooling.arguments_text(block.input or {}, f"{where}.input")))
        else:
            raise tooling.bad(f"{where}.type", f"an assistant message cannot hold a {block.type!r} block here.")
    return ChatMessage("assistant", "".join(texts), reasoning="".join(thoughts), tool_calls=tuple(calls))


def _user(blocks: list[Block], param: str) -> list[tuple[ChatMessage, str]]:
    """Tool results first, each its own tool message, then the user's text (as Anthropic's order asks);
    each with where it was, for a 400."""
    results: list[tuple[ChatMessage, str]] = []
    texts: list[str] = []
    images: list[ImagePart] = []
    for number, block in enumerate(blocks):
        where = f"{param}[{number}]"
        if block.type == "tool_result":
            if not block.tool_use_id:
                raise tooling.bad(f"{where}.tool_use_id", "a tool_result names the tool_use it answers.")
            text = _plain_text(block.content or "", f"{where}.content")
            if block.is_error:
                text = f"Error: {text}"
            results.append((ChatMessage("tool", text, tool_call_id=block.tool_use_id), f"{where}.tool_use_id"))
        elif block.type == "text":
            texts.append(block.text or "")
        elif block.type == "image":
            images.append(_image(block.source, f"{where}.source"))
        else:
            raise tooling.bad(f"{where}.type", f"a {block.type!r} block is not supported (text and image are read).")
    said = texts or images
    return results + ([(ChatMessage("user", "".join(texts), images=tuple(images)), param)] if said else [])


def _image(source: Any, param: str) -> ImagePart:
    """An image block's picture: base64 data only (a url source is refused: nothing is fetched for anyone)."""
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "url":
        raise tooling.bad(param, "image URLs are not fetched: send the picture itself as base64 data.")
    if kind != "base64" or not isinstance(source.get("data"), str):
        raise tooling.bad(param, 'an image source is {"type": "base64", "media_type": "image/png", "data": "..."}.')
    try:
        return from_base64(source["data"])
    except ImageError as error:
        raise tooling.bad(param, f"{error}.") from error


def _plain_text(content: str | list[Block], param: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for number, block in enumerate(content):
        if block.type != "text":
            raise tooling.bad(f"{param}[{number}].type", f"a {block.type!r} block is not supported here (text only).")
        texts.append(block.text or "")
    return "\n".join(texts) if len(texts) > 1 else "".join(texts)


def input_object(arguments: str) -> Any:
    """A call's arguments as Anthropic's `input` object (the model's JSON text, parsed)."""
    try:
        value = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}

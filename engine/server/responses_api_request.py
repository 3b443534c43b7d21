"""The Responses API's stateless core (POST /v1/responses), checked, as the engine's Submit.

`input` is text or items: messages (input_text / output_text parts, and
input_image parts with a data: URL in a user message), the
assistant's earlier `function_call` items and the client's `function_call_output`
items. `instructions` become the system message, function tools ToolSpecs,
`text.format` the constraint, `reasoning.effort` the template's switch. The
server keeps nothing between requests: `previous_response_id` is refused with a
400 that says to send the whole input; `store` is ignored.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import ConfigDict, Field

from engine.protocol import ChatMessage, Constraint, ImagePart, SamplingParams, Submit, ToolCall, ToolSpec
from engine.server import tooling
from engine.server.schema import _Strict, picture_at
from engine.server.web_tools import TYPE_ALIASES, ServerTools


class ContentPart(_Strict):
    type: str
    text: str | None = None
    image_url: str | None = None  # input_image: "data:image/png;base64,..." (nothing is fetched for anyone)
    file_id: str | None = None  # input_image / input_file: refused, there are no stored files here
    detail: str | None = None  # input_image: "low" / "high" / "auto"; the model's own processor decides


class InputItem(_Strict):
    type: str | None = None  # "message" where absent and a role is given
    role: Literal["user", "assistant", "system", "developer"] | None = None
    content: Union[str, list[ContentPart], None] = None
    call_id: str | None = None  # function_call, function_call_output
    name: str | None = None
    arguments: str | None = None
    output: Union[str, list[ContentPart], None] = None


class FunctionTool(_Strict):
    type: str
    name: str | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class TextFormat(_Strict):
    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)
    type: Literal["text", "json_object", "json_schema"] = "text"
    name: str | None = None
    schema_: Any = Field(default=None, alias="schema")
    strict: bool | None = None


class TextOptions(_Strict):
    format: TextFormat | None = None


class ReasoningOptions(_Strict):
    effort: str | None = None


class ResponsesRequest(_Strict):
    model: str | None = None
    input: Union[str, list[InputItem]]
    instructions: str | None = None
    tools: list[FunctionTool] | None = None
    tool_choice: Union[str, dict[str, Any], None] = None
    parallel_tool_calls: bool | None = None
    text: TextOptions | None = None
    reasoning: ReasoningOptions | None = None
    reasoning_budget: int | None = Field(default=None, ge=-1)  # as on /v1/chat/completions: -1 no limit, 0 none
    max_output_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    seed: int | None = None
    include: list[str] | None = None  # "message.output_text.logprobs" is kept; the rest name what is not here
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    stream: bool = False
    previous_response_id: str | None = None
    store: bool | None = None  # nothing is stored either way
    metadata: Any = None


def responses_submit(chat_id: str, request: ResponsesRequest, context_length: int,
                     server_tools: ServerTools | None = None) -> Submit:
    if request.previous_response_id:
        raise tooling.bad("previous_response_id", "this server keeps no responses: send the whole conversation "
                          "as 'input' items instead.")
    tools = _tools(request.tools or [], server_tools or ServerTools())
    given: dict[str, Any] = {"temperature": request.temperature, "top_p": request.top_p, "seed": request.seed}
    sampling = SamplingParams(**{name: value for name, value in given.items() if value is not None},
                              repeat_penalty=1.0, max_new_tokens=request.max_output_tokens or context_length,
                              constraint=_constraint(request.text), logprobs=wanted_logprobs(request),
                              reasoning_budget=None if request.reasoning_budget in (None, -1) else request.reasoning_budget)
    effort = request.reasoning.effort if request.reasoning else None
    choice = _tool_choice(request.tool_choice, tools)
    return Submit(chat_id, _messages(request), sampling, tools=tools, tool_choice=choice,
                  parallel_tool_calls=tooling.parallel_calls(request.parallel_tool_calls, choice),
                  template_options=tooling.template_options(None, "reasoning", reasoning_effort=effort))


LOGPROBS = "message.output_text.logprobs"


def wanted_logprobs(request: ResponsesRequest) -> int | None:
    """How many alternatives each token's log-probability comes with; None: no log-probabilities."""
    if LOGPROBS in (request.include or ()) or request.top_logprobs:
        return request.top_logprobs or 0
    return None


def _tools(tools: list[FunctionTool], server_tools: ServerTools) -> tuple[ToolSpec, ...]:
    specs = []
    for index, tool in enumerate(tools):
        if tool.type != "function":
            spec = server_tools.spec(tool.type)
            if spec is None:
                raise tooling.bad(f"tools[{index}].type", f"the built-in tool {tool.type!r} does not run here: give "
                                  "function tools and run them yourself (hearth-serve --tools web runs web_search "
                                  "and fetch_page itself).")
            specs.append(spec)
            continue
        specs.append(tooling.tool_spec(tool.name, tool.description, tool.parameters, f"tools[{index}]"))
    return tooling.unique_tools(specs, "tools")


def responses_server_tools(request: ResponsesRequest, server_tools: ServerTools) -> tuple[str, ...]:
    """The tools the request asked the server to run ({"type": "web_search"}), by name."""
    return tuple(spec.name for tool in request.tools or () if tool.type != "function"
                 for spec in [server_tools.spec(tool.type)] if spec is not None)


def _tool_choice(choice: str | dict[str, Any] | None, tools: tuple[ToolSpec, ...]) -> str:
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        return tooling.tool_choice(choice, None, tools, "tool_choice")
    kind = choice.get("type")
    if isinstance(kind, str) and kind != "function" and len(choice) == 1:  # a hosted tool: {"type": "web_search"}
        return tooling.tool_choice("auto", TYPE_ALIASES.get(kind, kind), tools, "tool_choice")
    if kind != "function" or not isinstance(choice.get("name"), str):
        raise tooling.bad("tool_choice", 'a named tool choice is {"type": "function", "name": ...}.')
    return tooling.tool_choice("auto", choice["name"], tools, "tool_choice")


def _constraint(text: TextOptions | None) -> Constraint | None:
    form = text.format if text is not None else None
    if form is None or form.type == "text":
        return None
    if form.type == "json_object":
        return Constraint("json_object")
    if form.schema_ is None:
        raise tooling.bad("text.format.schema", "a json_schema format carries the schema.")
    return tooling.json_schema_constraint(form.schema_, "text.format.schema")


def _messages(request: ResponsesRequest) -> tuple[ChatMessage, ...]:
    messages: list[ChatMessage] = [ChatMessage("system", request.instructions)] if request.instructions else []
    params = ["instructions"] * len(messages)
    items = [InputItem(role="user", content=request.input)] if isinstance(request.input, str) else request.input
    for index, item in enumerate(items):
        param = f"input[{index}]"
        kind = item.type or ("message" if item.role else "")
        if kind == "function_call":
            call = _call(item, param)
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":  # the same assistant turn: its text, its calls
                messages[-1] = ChatMessage("assistant", last.content, last.reasoning, (*last.tool_calls, call))
                continue
            messages.append(ChatMessage("assistant", "", tool_calls=(call,)))
        elif kind == "function_call_output":
            if not item.call_id:
                raise tooling.bad(f"{param}.call_id", "a function_call_output names the call it answers.")
            messages.append(ChatMessage("tool", _text(item.output, f"{param}.output"), tool_call_id=item.call_id))
        elif kind == "message" and item.role is not None:
            role = "system" if item.role == "developer" else item.role
            images = _images(item.content, f"{param}.content")
            if images and role != "user":
                raise tooling.bad(f"{param}.content", "only user messages carry images.")
            messages.append(ChatMessage(role, _text(item.content, f"{param}.content"), images=images))
        elif kind == "reasoning":
            continue  # earlier thinking: templates drop it from the next prompt anyway
        else:
            raise tooling.bad(f"{param}.type", f"an input item of type {kind or 'none'!r} is not supported "
                              "(message, function_call, function_call_output).")
        params.append(f"{param}.call_id" if kind == "function_call_output" else param)
    return tooling.check_tool_results(tuple(messages), params)


def _call(item: InputItem, param: str) -> ToolCall:
    if not item.call_id or not item.name:
        raise tooling.bad(param, "a function_call item has a call_id and a name.")
    return ToolCall(item.call_id, item.name, tooling.arguments_text(item.arguments or "{}", f"{param}.arguments"))


def _text(content: str | list[ContentPart] | None, param: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for number, part in enumerate(content):
        if part.type == "input_image":
            continue  # _images reads it
        if part.type not in ("input_text", "output_text", "text") or part.text is None:
            raise tooling.bad(f"{param}[{number}].type", f"a {part.type!r} part is not supported (text and "
                              "input_image parts are read).")
        texts.append(part.text)
    return "".join(texts)


def _images(content: str | list[ContentPart] | None, param: str) -> tuple[ImagePart, ...]:
    """The pictures of a message's input_image parts: data: URLs only (no URL is fetched, no file is stored)."""
    if content is None or isinstance(content, str):
        return ()
    images = []
    for number, part in enumerate(content):
        if part.type != "input_image":
            continue
        where = f"{param}[{number}]"
        if part.image_url is None:
            why = ("there are no stored files here: send the picture itself" if part.file_id else
                   "an input_image part carries the picture")
            raise tooling.bad(f"{where}.image_url", f"{why} as image_url \"data:image/png;base64,...\".")
        images.append(picture_at(part.image_url, f"{where}.image_url"))
    return tuple(images)

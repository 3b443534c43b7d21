"""OpenAI's chat and plain completion requests as the engine's Submit: messages, tools, formats, template options."""

from __future__ import annotations

from engine.protocol import ChatMessage, Constraint, Submit, ToolCall, ToolSpec
from engine.server import schema, tooling
from engine.server.schema import ChatRequest, CompletionRequest, Message, Tool
from engine.server.web_tools import TYPE_ALIASES, ServerTools


def chat_submit(chat_id: str, request: ChatRequest, context_length: int,
                server_tools: ServerTools | None = None) -> Submit:
    tools = tooling.unique_tools((_tool_spec(tool, f"tools[{index}]", server_tools or ServerTools())
                                  for index, tool in enumerate(request.tools or ())), "tools")
    logprobs = (request.top_logprobs or 0) if request.logprobs else None
    budget = None if request.reasoning_budget in (None, -1) else request.reasoning_budget
    sampling = schema.sampling(request, context_length, response_constraint(request), logprobs, budget)
    choice = chat_tool_choice(request.tool_choice, tools)
    return Submit(chat_id, chat_messages(request.messages), sampling, tools=tools, tool_choice=choice,
                  parallel_tool_calls=tooling.parallel_calls(request.parallel_tool_calls, choice),
                  template_options=tooling.template_options(request.chat_template_kwargs, "chat_template_kwargs",
                                                            reasoning_effort=request.reasoning_effort))


def _tool_spec(tool: Tool, param: str, server_tools: ServerTools) -> ToolSpec:
    """A client's function, or one of the server's own tools asked for by its type ({"type": "web_search"})."""
    if tool.type != "function":
        spec = server_tools.spec(tool.type)
        if spec is None:
            offered = ", ".join(repr(name) for name in server_tools.names())
            raise tooling.bad(f"{param}.type", f"the tool type {tool.type!r} does not run here " + (
                f"(this server runs {offered}, and functions)." if offered else
                "(functions only; hearth-serve --tools web runs web_search and fetch_page itself)."))
        return spec
    if tool.function is None:
        raise tooling.bad(f"{param}.function", 'a function tool is {"type": "function", "function": {"name": ...}}.')
    return tooling.tool_spec(tool.function.name, tool.function.description, tool.function.parameters,
                             f"{param}.function")


def server_tool_names(request: ChatRequest, server_tools: ServerTools) -> tuple[str, ...]:
    """The tools the request asked the server to run (its entries of their own type), by name."""
    return tuple(spec.name for tool in request.tools or () if tool.type != "function"
                 for spec in [server_tools.spec(tool.type)] if spec is not None)


def completion_submit(chat_id: str, request: CompletionRequest, context_length: int) -> Submit:
    sampling = schema.sampling(request, context_length, grammar(request), request.logprobs)
    return Submit(chat_id, (), sampling, prompt=schema.completion_prompt(request))


def grammar(request: ChatRequest | CompletionRequest) -> Constraint | None:
    """llama-server's `grammar` field: a GBNF grammar the answer must match."""
    return tooling.usable(Constraint("gbnf", request.grammar), "grammar") if request.grammar else None


def chat_messages(messages: list[Message]) -> tuple[ChatMessage, ...]:
    mapped, params = [], []
    for index, message in enumerate(messages):
        param = f"messages[{index}]"
        text = schema.text_of(message.content, f"{param}.content")
        images = schema.images_of(message.content, f"{param}.content")
        if images and message.role != "user":
            raise tooling.bad(f"{param}.content", "only user messages carry images.")
        if message.role in ("tool", "function"):
            if not message.tool_call_id:
                raise tooling.bad(f"{param}.tool_call_id", "a tool message names the call it answers.")
            mapped.append(ChatMessage("tool", text, tool_call_id=message.tool_call_id, name=message.name or ""))
        elif message.role == "assistant":
            calls = tuple(ToolCall(call.id, call.function.name, tooling.arguments_text(
                call.function.arguments, f"{param}.tool_calls[{number}].function.arguments"))
                for number, call in enumerate(message.tool_calls or ()))
            mapped.append(ChatMessage("assistant", text, reasoning=message.reasoning_content or "", tool_calls=calls))
        else:
            if message.tool_calls:
                raise tooling.bad(f"{param}.tool_calls", "only assistant messages make tool calls.")
            mapped.append(ChatMessage("user" if message.role == "user" else "system", text, images=images))  # developer: system
        params.append(f"{param}.tool_call_id" if message.role in ("tool", "function") else param)
    return tooling.check_tool_results(tuple(mapped), params)


def chat_tool_choice(choice: str | dict[str, object] | None, tools: tuple[ToolSpec, ...]) -> str:
    if choice is None:
        return "auto"
    if isinstance(choice, str):
        return tooling.tool_choice(choice, None, tools, "tool_choice")
    function = choice.get("function")
    name = function.get("name") if isinstance(function, dict) else None
    kind = choice.get("type")
    if isinstance(kind, str) and kind != "function" and len(choice) == 1:  # a server tool by its type, as Responses
        name = TYPE_ALIASES.get(kind, kind)
    elif kind != "function" or not isinstance(name, str):
        raise tooling.bad("tool_choice", 'a named tool choice is {"type": "function", "function": {"name": ...}}.')
    return tooling.tool_choice("auto", name, tools, "tool_choice")


def response_constraint(request: ChatRequest) -> Constraint | None:
    form = request.response_format
    if form is None or form.type == "text":
        return grammar(request)
    if form.type == "json_object":
        return Constraint("json_object")
    if form.json_schema is None or form.json_schema.schema_ is None:
        raise tooling.bad("response_format.json_schema", "a json_schema response format carries the schema: "
                          '{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}.')
    return tooling.json_schema_constraint(form.json_schema.schema_, "response_format.json_schema.schema")

"""One turn's prompt with its tools and options, and what its parser must look for.

Where the template renders tools they go through it (`tools=` as transformers passes them). Where
it does not, a fallback system prompt describes them and asks for Hermes-style calls
(`<tool_call>{"name": …, "arguments": …}</tool_call>`, as LM Studio does), earlier calls are written
that way into the assistant messages, and tool results become user messages ("Tool result for call
X (name): …"), since such templates know no tool role. Think off (enable_thinking false) for a
template without that switch whose generation prompt opens the thinking: the empty thought its
authors document (`<think>\\n\\n</think>\\n\\n`) is written after the prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from engine.chat_template import ChatTemplateError
from engine.parsing.detect import starts_in_reasoning
from engine.parsing.formats import FALLBACK_TOOL_FORMAT, OutputFormat, ToolCallFormat
from engine.parsing.harmony import HarmonyParser
from engine.parsing.stream import OutputParser
from engine.protocol import ChatMessage, Submit, ToolSpec

Render = Callable[[Sequence[ChatMessage], Sequence[ToolSpec], Sequence[tuple[str, str]]], str]

FALLBACK_TOOL_PROMPT = (
    "You can call functions to help with the user's request. The functions, as JSON Schema:\n"
    "<tools>\n{tools}\n</tools>\n\n"
    "To call one, answer with a JSON object holding its name and arguments inside <tool_call></tool_call> "
    "tags, one call per tag, and nothing after the last call:\n"
    '<tool_call>\n{{"name": "<function name>", "arguments": {{<arguments as JSON>}}}}\n</tool_call>\n'
    "The results come back in the next message. Answer normally when no function is needed."
)
NATIVE_TOOL_PROMPT = (
    "You can call functions to help with the user's request. The functions, as JSON Schema:\n"
    "{tools}\n\nTo call one, answer with:\n{example}\n"
    "The results come back in the next message. Answer normally when no function is needed."
)


@dataclass(frozen=True)
class TurnSetup:
    """What the scheduler needs to read this turn's output."""

    output: OutputFormat
    tools: ToolCallFormat | None  # the call format the parser looks for; None: no tools this turn
    in_reasoning: bool  # the prompt opened the thinking: the output starts inside it
    tool_specs: tuple[ToolSpec, ...] = ()
    tool_choice: str = "auto"  # Submit.tool_choice
    parallel_tool_calls: bool = True
    thinking_off: bool = False  # the client switched the thinking off (enable_thinking false)

    @property
    def forced_call(self) -> bool:
        """tool_choice "required" or a tool's name: the answer must be a call."""
        return self.tools is not None and self.tool_choice not in ("auto", "none")

    def parser(self) -> OutputParser | HarmonyParser:
        if self.output.harmony:
            return HarmonyParser(self.in_reasoning)
        return OutputParser(self.output, self.tools, self.in_reasoning, self.tool_specs)


def prepare_turn(render: Render, output: OutputFormat, submit: Submit) -> tuple[str, TurnSetup]:
    """The prompt text for this turn and how to parse what comes back."""
    tools = submit.tools if submit.tool_choice != "none" else ()
    native = output.tools is not None
    if native and tools and output.tools is not None and not output.tools.renders_tools:
        # The template writes calls and results its own way but not the tools: they go in a system prompt
        messages = _with_system(list(submit.messages), native_tool_prompt(tools, output.tools), True)
        prompt = render(messages, (), submit.template_options)
    elif native:
        prompt = render(submit.messages, tools, submit.template_options)
    else:
        prompt = _render_fallback(render, submit.messages, tools, submit.template_options)
    prompt += _thinking_off_prefill(output, submit.template_options)
    call_format = (output.tools if native else FALLBACK_TOOL_FORMAT) if tools else None
    return prompt, TurnSetup(output, call_format, starts_in_reasoning(prompt, output), tuple(tools),
                             submit.tool_choice, submit.parallel_tool_calls,
                             _wants_thinking_off(submit.template_options))


def _render_fallback(render: Render, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                     options: Sequence[tuple[str, str]]) -> str:
    try:
        return render(fallback_messages(messages, tools), (), options)
    except ChatTemplateError:
        if not tools:
            raise
        # Templates without a system role (Gemma's refuse one): the tools go before the first question
        return render(fallback_messages(messages, tools, in_system=False), (), options)


def plain_turn(output: OutputFormat) -> TurnSetup:
    """A plain completion (Submit.prompt): no tools; its text is the answer unless markers say otherwise."""
    return TurnSetup(replace(output, tools=None), None, False)


def _wants_thinking_off(options: Sequence[tuple[str, str]]) -> bool:
    return any(name == "enable_thinking" and value.strip() == "false" for name, value in options)


def _thinking_off_prefill(output: OutputFormat, options: Sequence[tuple[str, str]]) -> str:
    reasoning = output.reasoning
    if reasoning is None or not _wants_thinking_off(options) or "enable_thinking" in reasoning.switches:
        return ""
    return reasoning.empty_thought


def fallback_messages(messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                      in_system: bool = True) -> tuple[ChatMessage, ...]:
    """The conversation for a template without tool support: tools in the system prompt, calls as text."""
    mapped: list[ChatMessage] = []
    for message in messages:
        if message.role == "tool":
            result = f"Tool result for call {message.tool_call_id} ({message.name or 'tool'}):\n{message.content}"
            if mapped and mapped[-1].role == "user" and mapped[-1].content.startswith("Tool result for call"):
                result = mapped.pop().content + "\n\n" + result  # templates that want turns to alternate
            mapped.append(ChatMessage("user", result))
        elif message.tool_calls:
            calls = "\n".join(_hermes_call(call.name, call.arguments) for call in message.tool_calls)
            content = f"{message.content}\n{calls}" if message.content else calls
            mapped.append(ChatMessage("assistant", content, reasoning=message.reasoning))
        else:
            mapped.append(message)
    if tools:
        mapped = _with_system(mapped, fallback_tool_prompt(tools), in_system)
    return tuple(mapped)


def _hermes_call(name: str, arguments: str) -> str:
    try:
        parsed: object = json.loads(arguments)
    except ValueError:
        parsed = arguments
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": parsed}, ensure_ascii=False) + "\n</tool_call>"


def fallback_tool_prompt(tools: Sequence[ToolSpec]) -> str:
    return FALLBACK_TOOL_PROMPT.format(tools=_described(tools))


def _described(tools: Sequence[ToolSpec]) -> str:
    described = []
    for spec in tools:
        try:
            parameters: object = json.loads(spec.parameters)
        except ValueError:
            parameters = {"type": "object"}
        described.append(json.dumps({"name": spec.name, "description": spec.description, "parameters": parameters},
                                    ensure_ascii=False))
    return "\n".join(described)


def native_tool_prompt(tools: Sequence[ToolSpec], call_format: ToolCallFormat) -> str:
    """The tools, and how to call them in the model's own format (a template that writes calls only)."""
    return NATIVE_TOOL_PROMPT.format(tools=_described(tools), example=call_example(call_format))


def call_example(call_format: ToolCallFormat) -> str:
    """One call written as the format writes it, with placeholders for the name and the arguments."""
    if call_format.style == "name_args":
        body = f"<function name>{call_format.args_marker}{{<arguments as JSON>}}"
    else:
        body = json.dumps({call_format.name_key: "<function name>", call_format.arguments_key: "ARGS"})
        body = body.replace('"ARGS"', "{<arguments as JSON>}")
    return f"{call_format.calls_open}{call_format.open}{body}{call_format.close}{call_format.calls_close}"


def _with_system(messages: list[ChatMessage], text: str, in_system: bool) -> list[ChatMessage]:
    if not in_system:
        first = next((i for i, message in enumerate(messages) if message.role == "user"), None)
        if first is not None:
            merged = replace(messages[first], content=f"{text}\n\n{messages[first].content}")
            return [*messages[:first], merged, *messages[first + 1 :]]
    if messages and messages[0].role == "system":
        return [replace(messages[0], content=f"{messages[0].content}\n\n{text}"), *messages[1:]]
    return [ChatMessage("system", text), *messages]

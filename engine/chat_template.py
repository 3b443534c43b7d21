"""Render a conversation with the model's own chat template, sandboxed.

Templates come from model files, so they are untrusted: they run in Jinja's
ImmutableSandboxedEnvironment, never with access to Python objects of ours.
"""

from __future__ import annotations

import json
from datetime import date
from functools import lru_cache
from typing import Any, Sequence

from jinja2 import Template, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.protocol import ChatMessage, ToolCall, ToolSpec

# Used when a model file carries no template: ChatML, understood by many models.
FALLBACK_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
# Where the fallback's turns end. A model without a template of its own, often a base model, was
# never taught to stop there: it writes the next turn's markers and goes on, so they end the answer.
FALLBACK_END_MARKERS = ("<|im_end|>", "<|im_start|>")


class ChatTemplateError(Exception):
    pass


def _raise_exception(message: str) -> None:
    raise ChatTemplateError(message)


def _environment() -> ImmutableSandboxedEnvironment:
    # loopcontrols: transformers renders with it, and templates use {% break %}
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: date.today().strftime(fmt)
    env.filters["tojson"] = _tojson
    return env


def _tojson(value: object, indent: int | None = None) -> str:
    return json.dumps(value, ensure_ascii=False, indent=indent)


# Variables the renderer sets itself: a template option may not replace them.
RESERVED_NAMES = frozenset({"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"})


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def tool_dict(spec: ToolSpec) -> dict[str, Any]:
    """A tool as transformers' apply_chat_template passes it: OpenAI's function shape."""
    parameters = _json_or_text(spec.parameters)
    return {"type": "function", "function": {
        "name": spec.name, "description": spec.description,
        "parameters": parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}},
    }}


def tool_call_dict(call: ToolCall) -> dict[str, Any]:
    """Arguments as a mapping: templates write them with `tojson` or walk them with `items`."""
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": _json_or_text(call.arguments)}}


def message_dict(message: ChatMessage) -> dict[str, Any]:
    """One message as chat templates read it (the keys transformers' callers use)."""
    entry: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        entry["tool_calls"] = [tool_call_dict(call) for call in message.tool_calls]
    if message.reasoning:
        entry["reasoning_content"] = message.reasoning  # Qwen3, QwQ and most <think> templates
        if not (message.tool_calls and message.content):  # gpt-oss refuses both beside calls
            entry["thinking"] = message.reasoning  # gpt-oss
    if message.role == "tool":
        entry["tool_call_id"] = message.tool_call_id
        if message.name:
            entry["name"] = message.name
    return entry


def template_variables(options: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Submit.template_options as template variables: JSON values, names the renderer does not own."""
    variables: dict[str, Any] = {}
    for name, value in options:
        if name in RESERVED_NAMES or not name.isidentifier():
            raise ChatTemplateError(f"the template option {name!r} cannot be set")
        variables[name] = _json_or_text(value)
    return variables


@lru_cache(maxsize=16)
def _compiled(source: str) -> Template:
    """Compiling a long template takes a while (gpt-oss's: ~0.3 s); every turn renders it again."""
    return _environment().from_string(source)


def end_markers(template: str | None) -> tuple[str, ...]:
    """Text that ends an answer besides the model's end-of-generation tokens: the fallback's markers."""
    return () if template else FALLBACK_END_MARKERS


def render_chat(
    template: str | None,
    messages: Sequence[ChatMessage],
    bos_token: str = "",
    eos_token: str = "",
    tools: Sequence[ToolSpec] = (),
    options: Sequence[tuple[str, str]] = (),
    add_generation_prompt: bool = True,
) -> str:
    """The prompt text for the next assistant answer (or, without the generation prompt, the conversation).

    `tools` reach the template as `tools` only when there are some (templates test `if tools`);
    `options` are extra variables such as enable_thinking or reasoning_effort.
    """
    source = template or FALLBACK_TEMPLATE
    variables = template_variables(options)
    if tools:
        variables["tools"] = [tool_dict(spec) for spec in tools]
    try:
        return _compiled(source).render(
            messages=[message_dict(m) for m in messages],
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token,
            eos_token=eos_token,
            **variables,
        )
    except ChatTemplateError:
        raise
    except TemplateError as error:
        raise ChatTemplateError(f"the model's chat template failed: {error}") from error

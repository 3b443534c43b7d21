"""Render a conversation with the model's own chat template, sandboxed.

Templates come from model files, so they are untrusted: they run in Jinja's
ImmutableSandboxedEnvironment, never with access to Python objects of ours.
"""

from __future__ import annotations

from datetime import date
from typing import Sequence

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from engine.protocol import ChatMessage

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
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: date.today().strftime(fmt)
    env.filters["tojson"] = _tojson
    return env


def _tojson(value: object, indent: int | None = None) -> str:
    import json

    return json.dumps(value, ensure_ascii=False, indent=indent)


def end_markers(template: str | None) -> tuple[str, ...]:
    """Text that ends an answer besides the model's end-of-generation tokens: the fallback's markers."""
    return () if template else FALLBACK_END_MARKERS


def render_chat(
    template: str | None,
    messages: Sequence[ChatMessage],
    bos_token: str = "",
    eos_token: str = "",
) -> str:
    """The prompt text for the next assistant answer."""
    source = template or FALLBACK_TEMPLATE
    try:
        compiled = _environment().from_string(source)
        return compiled.render(
            messages=[{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True,
            bos_token=bos_token,
            eos_token=eos_token,
        )
    except ChatTemplateError:
        raise
    except TemplateError as error:
        raise ChatTemplateError(f"the model's chat template failed: {error}") from error

"""What a turn is made of: the chat's messages, tool specs and calls, pictures, constraints, sampling."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Speculative = Literal["off", "auto"]
Role = Literal["system", "user", "assistant", "tool"]
ConstraintKind = Literal["json_schema", "json_object", "regex", "lark", "gbnf"]


@dataclass(frozen=True)
class ToolCall:
    """One call the model made: `arguments` is the JSON text of the arguments object."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ToolSpec:
    """A function the model may call; `parameters` is its JSON Schema as JSON text (frozen, hashable)."""

    name: str
    description: str = ""
    parameters: str = '{"type": "object", "properties": {}}'


IMAGE_TYPES = ("image/png", "image/jpeg", "image/webp")  # what the window and the API accept


@dataclass(frozen=True)
class ImagePart:
    """A picture in a message, as the file's own bytes (PNG, JPEG or WebP): only a model that can see
    ("vision" in ModelInfo.capabilities) takes a message that has one."""

    data: bytes = field(repr=False)
    mime: str = "image/png"


@dataclass(frozen=True)
class Dictation:
    """A user message that was spoken: what the speech model heard (the person may have edited the text
    before sending it), the language it heard, the model's name and the recording's length."""

    transcript: str
    language: str = ""
    model: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation.

    An assistant message may carry the thinking that came before its answer (`reasoning`) and the
    tool calls it made; a tool message answers the call named by `tool_call_id`.
    """

    role: Role
    content: str
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str = ""
    name: str = ""  # a tool message: the tool's name (templates that want it)
    images: tuple[ImagePart, ...] = ()  # shown to the model before the text
    dictation: Dictation | None = None  # a user message that was spoken (kept in the history; the model sees text)


@dataclass(frozen=True)
class Constraint:
    """What a sequence's output must match; the sampler sees only tokens that keep it matchable.

    `source`: the JSON Schema as JSON text (json_schema), "" (json_object), the pattern (regex),
    or the grammar (lark: llguidance's Lark dialect; gbnf: llama.cpp's).
    """

    kind: ConstraintKind
    source: str = ""


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 0.7
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.1
    frequency_penalty: float = 0.0  # OpenAI's: minus this much per earlier use of a token (last 64 tokens)
    presence_penalty: float = 0.0  # minus this much once for a token used at all (last 64 tokens)
    seed: int | None = None
    max_new_tokens: int = 512
    stop: tuple[str, ...] = ()
    ignore_eos: bool = False  # the benchmark wants every request to run to max_new_tokens
    # Prompt-lookup drafts (engine/speculative.py): the same answer, sooner where it repeats its context.
    speculative: Speculative = "auto"  # measured: edits sooner, chat as fast (docs/benchmarks.md)
    constraint: Constraint | None = None  # the whole answer must match it (engine/constraints)
    logprobs: int | None = None  # None: none; 0: the chosen token's; N (<= 20): and the N likeliest
    reasoning_budget: int | None = None  # thinking tokens before the engine closes the thinking itself

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

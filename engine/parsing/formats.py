"""How a model marks the parts of its output: the frozen description the parser and the grammars share.

Found from the chat template and the vocabulary (engine/parsing/detect.py), never from a model's name.
The constrained decoding of tool calls builds its grammar from `ToolCallFormat`: a call is
`open` + body + `close`; the body is a JSON object {name_key: "<name>", arguments_key: {...}}
(style "json"), or the name then `args_marker` then the arguments object (style "name_args",
Mistral's newer `[TOOL_CALLS]name[ARGS]{...}`), or a JSON array of such objects after `open`
(style "json_array", Mistral's `[TOOL_CALLS][{...}, {...}]`). Harmony (gpt-oss) is "name_args" too:
open `<|channel|>commentary to=functions.`, the name, args_marker ` <|constrain|>json<|message|>`, the
arguments, close `<|call|>` (an end-of-generation token: the turn ends with the call).
Style "xml" is Qwen3-Coder's: `<tool_call>` then `<function=NAME>`, a `<parameter=KEY>…</parameter>` per
argument and `</function>`, then `</tool_call>` (engine/parsing/xml_call.py reads the body).
Style "gemma" is Gemma 4's: `<|tool_call>call:` then the name and the arguments in Gemma's notation
(engine/parsing/gemma_call.py), then `<tool_call|>`; `<|tool_response>` after the last call.
Several calls in a row are joined by `separator` (between one call's close and the next's open;
inside the array for "json_array").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# A marker-like piece of a marker: <|...|>, DeepSeek's <｜...｜>, Gemma 4's <|tool_call> and <tool_call|>,
# [TOOL_CALLS]-like, <tool_call>-like
MARKER_LIKE = re.compile(r"<\|[^<>|]*\|>|<｜[^<>｜]*｜>|<\|[A-Za-z_]+>|<[A-Za-z_]+\|>|\[/?[A-Z_]+\]|</?[A-Za-z_]+>")

ToolCallStyle = Literal["json", "json_array", "name_args", "xml", "gemma"]


@dataclass(frozen=True)
class ToolCallFormat:
    """Where a call starts and ends in the output and how its body is written."""

    family: str  # for people and logs: "hermes", "llama3_json", "mistral", "mistral_args", "harmony", "qwen3_xml", "fallback"
    style: ToolCallStyle
    open: str  # marks the start of a call ("<tool_call>", "[TOOL_CALLS]", "" where the JSON itself begins it)
    close: str = ""  # marks its end ("</tool_call>"; "" where the object's end or the turn's end does)
    name_key: str = "name"
    arguments_key: str = "arguments"  # Llama 3.x writes "parameters"
    separator: str = "\n"  # between parallel calls
    args_marker: str = ""  # style "name_args": between the name and the arguments ("[ARGS]")
    # Other texts that may also open a call in this format (Llama's <|python_tag|> before its JSON)
    alternative_opens: tuple[str, ...] = ()
    parallel: bool = True  # the template renders more than one call in a message
    # Keys other than name/arguments the model writes in a call object (Mistral v3's 9-character "id")
    extra_keys: tuple[str, ...] = ()
    # Around all the calls of one message (DeepSeek's <｜tool▁calls▁begin｜> … <｜tool▁calls▁end｜>),
    # `open`/`close` then being each call's own markers
    calls_open: str = ""
    calls_close: str = ""
    # The template writes the tools' definitions into the prompt; False: it writes calls only
    # (DeepSeek's), and the definitions go in a system prompt (engine/parsing/prompt.py)
    renders_tools: bool = True

    @property
    def marker_texts(self) -> tuple[str, ...]:
        """Every marker of the format, and the marker-like pieces of compound ones."""
        markers = [self.open, self.close, self.args_marker, self.separator, self.calls_open, self.calls_close,
                   *self.alternative_opens, *(('<|"|>',) if self.style == "gemma" else ())]
        pieces = [piece for marker in markers for piece in MARKER_LIKE.findall(marker)]
        return tuple(dict.fromkeys(text for text in (*markers, *pieces) if text and text.strip()))

    @property
    def opens(self) -> tuple[str, ...]:
        """What opens the first call of an answer."""
        return tuple(self.calls_open + marker for marker in (self.open, *self.alternative_opens) if marker)


@dataclass(frozen=True)
class ReasoningFormat:
    """Thinking between `open` and `close` before the answer."""

    family: str  # "think", "mistral_think", "harmony"
    open: str  # "<think>", "[THINK]"; harmony: "<|channel|>analysis<|message|>"
    close: str  # "</think>", "[/THINK]"; harmony: "<|end|>"
    # The template's switches: "enable_thinking" (on/off), "reasoning_effort" (low/medium/high)
    switches: tuple[str, ...] = ()
    # How to turn thinking off where the template has no switch but its generation prompt opens the
    # thinking: the text its authors document as an empty thought, written after the prompt.
    empty_thought: str = ""


@dataclass(frozen=True)
class OutputFormat:
    """Everything the parser needs to know about one model's output."""

    tools: ToolCallFormat | None = None  # None: the template has no tool support (the fallback prompt applies)
    reasoning: ReasoningFormat | None = None
    harmony: bool = False  # gpt-oss: channels (analysis / commentary / final) instead of inline markers
    # Special tokens the detokenizer must render as text (the markers above that are single control
    # tokens of the vocabulary); every other control token keeps rendering as nothing.
    marker_texts: tuple[str, ...] = field(default=())
    # Marker texts (or parts of them: harmony's `<|channel|>`) that are one special token of the
    # vocabulary, with its id: grammars name these by id, since a special token is never text to them.
    special_tokens: tuple[tuple[str, int], ...] = field(default=())

    @property
    def capabilities(self) -> tuple[str, ...]:
        """ModelInfo.capabilities: what the chat panel and /v1/models show."""
        found: list[str] = []
        if self.tools is not None:
            found.append("tools")
        if self.reasoning is not None:
            found.append("reasoning")
            # Think on/off: the template's switch, or the empty thought its authors document
            if "enable_thinking" in self.reasoning.switches or self.reasoning.empty_thought:
                found.append("thinking_switch")
            if "reasoning_effort" in self.reasoning.switches:
                found.append("reasoning_effort")
        return tuple(found)


# Where the template cannot render tools: the format the fallback system prompt teaches.
FALLBACK_TOOL_FORMAT = ToolCallFormat(family="fallback", style="json", open="<tool_call>", close="</tool_call>")
PLAIN = OutputFormat()

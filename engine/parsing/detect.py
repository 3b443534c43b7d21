"""Which markers a model writes, found from its chat template and vocabulary (never from its name).

Tools: how the template writes calls (engine/parsing/detect_calls.py). Reasoning: the thinking markers the template mentions, or the vocabulary has as single tokens;
its switches are the variables (enable_thinking, reasoning_effort) whose values change the prompt.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.parsing.detect_calls import QUESTION, Renderer, tool_format
from engine.parsing.formats import FALLBACK_TOOL_FORMAT, MARKER_LIKE, OutputFormat, ReasoningFormat, ToolCallFormat

SingleToken = Callable[[str], bool]  # whether a text is one token of the vocabulary
SpecialId = Callable[[str], "int | None"]  # the id of the special token a text is, else None

REASONING_MARKERS = (("think", "<think>", "</think>"), ("mistral_think", "[THINK]", "[/THINK]"),
                     ("gemma4", "<|channel>thought", "<channel|>"))
HARMONY_TOKENS = ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>")
HARMONY_REASONING = ReasoningFormat("harmony", "<|channel|>analysis<|message|>", "<|end|>")


def detect_format(template: str | None, single_token: SingleToken, bos: str = "", eos: str = "",
                  special_id: SpecialId | None = None) -> OutputFormat:
    """The model's OutputFormat; the plain one where it has no template. `special_id`: which texts the
    vocabulary holds as special tokens (a grammar must name those by id); None: none."""
    if not template:
        return OutputFormat()
    render = Renderer(template, bos, eos)
    harmony = all(token in template for token in ("<|channel|>", "<|message|>"))
    tools = tool_format(render, harmony)
    reasoning = _reasoning_format(template, render, single_token, harmony)
    markers = _marker_texts(tools, reasoning, harmony, single_token)
    specials = _special_tokens(tools, reasoning, harmony, special_id) if special_id is not None else ()
    return OutputFormat(tools=tools, reasoning=reasoning, harmony=harmony, marker_texts=markers,
                        special_tokens=specials)


def starts_in_reasoning(prompt: str, output: OutputFormat) -> bool:
    """The rendered prompt opened the thinking itself (R1 distills, QwQ): the output starts inside it."""
    reasoning = output.reasoning
    return reasoning is not None and not output.harmony and prompt.rstrip().endswith(reasoning.open)


# ---------------------------------------------------------------- reasoning


def _reasoning_format(template: str, render: Renderer, single_token: SingleToken,
                      harmony: bool) -> ReasoningFormat | None:
    switches = _switches(render)
    if harmony:
        return ReasoningFormat("harmony", HARMONY_REASONING.open, HARMONY_REASONING.close, switches)
    for family, open_marker, close_marker in REASONING_MARKERS:
        mentioned = close_marker in template or open_marker in template
        if mentioned or (single_token(open_marker) and single_token(close_marker)):
            prompt = render([QUESTION]) or ""
            empty = _empty_thought(prompt, open_marker, close_marker) if "enable_thinking" not in switches else ""
            return ReasoningFormat(family, open_marker, close_marker, switches, empty)
    return None


def _switches(render: Renderer) -> tuple[str, ...]:
    found: list[str] = []
    if render([QUESTION], options=(("enable_thinking", "false"),)) != render(
            [QUESTION], options=(("enable_thinking", "true"),)):
        found.append("enable_thinking")
    if render([QUESTION], options=(("reasoning_effort", '"low"'),)) != render(
            [QUESTION], options=(("reasoning_effort", '"high"'),)):
        found.append("reasoning_effort")
    return tuple(found)


def _empty_thought(prompt: str, open_marker: str, close_marker: str) -> str:
    """What closes a thought the generation prompt opened, as an empty one: `<think>\\n\\n</think>\\n\\n`."""
    stripped = prompt.rstrip()
    if not stripped.endswith(open_marker):
        return ""
    written_after = prompt[len(stripped):]
    return "\n\n"[len(written_after):] + close_marker + "\n\n" if written_after in ("", "\n") else ""


def _special_tokens(tools: ToolCallFormat | None, reasoning: ReasoningFormat | None, harmony: bool,
                    special_id: SpecialId) -> tuple[tuple[str, int], ...]:
    """Each marker, and each marker-like piece of one, that is a special token of the vocabulary."""
    texts: list[str] = [*HARMONY_TOKENS, "<|call|>"] if harmony else []
    for call_format in (tools, FALLBACK_TOOL_FORMAT):
        if call_format is not None:
            texts += call_format.marker_texts
    if reasoning is not None:
        texts += [reasoning.open, reasoning.close, *MARKER_LIKE.findall(reasoning.open)]
    pieces = [piece for text in texts if text for piece in (text.strip(), *MARKER_LIKE.findall(text))]
    found: dict[str, int] = {}
    for piece in dict.fromkeys(pieces):
        token = special_id(piece) if piece else None
        if token is not None:
            found[piece] = token
    return tuple(found.items())


def _marker_texts(tools: ToolCallFormat | None, reasoning: ReasoningFormat | None, harmony: bool,
                  single_token: SingleToken) -> tuple[str, ...]:
    """The markers that are single tokens: the detokenizer must show them for the parser to see them."""
    candidates: list[str] = list(HARMONY_TOKENS) if harmony else []
    if reasoning is not None and not harmony:
        candidates += [reasoning.open, reasoning.close, *MARKER_LIKE.findall(reasoning.open)]
    if tools is not None and not harmony:
        # with the marker-like pieces of compound markers (DeepSeek's <｜tool▁call▁begin｜>function<｜tool▁sep｜>)
        candidates += tools.marker_texts
    # The fallback prompt's Hermes markers are often single tokens too (Qwen's vocabulary has them)
    candidates += ["<tool_call>", "</tool_call>"]
    return tuple(dict.fromkeys(text for text in candidates if text and single_token(text)))


"""Which markers a model writes, found from its chat template and vocabulary (never from its name).

Tools: the template is rendered with and without a probe tool; where the tool shows up it renders
tools, and a probe assistant message that calls it shows how a call is written: the text before
the call's JSON (or its name) is the opening marker, the text after it (less the end of the turn,
seen on a plain answer) the closing one, the JSON keys those of the name and the arguments. Two
calls in one message give the separator (a template that refuses two makes `parallel` False).
Reasoning: the thinking markers the template mentions, or the vocabulary has as single tokens;
its switches are the variables (enable_thinking, reasoning_effort) whose values change the prompt.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from engine.chat_template import render_chat
from engine.parsing.formats import FALLBACK_TOOL_FORMAT, OutputFormat, ReasoningFormat, ToolCallFormat
from engine.protocol import ChatMessage, ToolCall, ToolSpec

SingleToken = Callable[[str], bool]  # whether a text is one token of the vocabulary
SpecialId = Callable[[str], "int | None"]  # the id of the special token a text is, else None

PROBE_NAME = "hearth_probe_tool"
PROBE_ARGUMENTS = {"probe_argument": "probe value"}
PROBE_TOOL = ToolSpec(PROBE_NAME, "A probe.", json.dumps(
    {"type": "object", "properties": {"probe_argument": {"type": "string"}}, "required": ["probe_argument"]}))
PROBE_ANSWER = "hearth probe answer"
QUESTION = ChatMessage("user", "hearth probe question")
# Mistral's templates want ids of 9 letters and digits
PROBE_CALL = ToolCall("a1b2c3d4e", PROBE_NAME, json.dumps(PROBE_ARGUMENTS))

REASONING_MARKERS = (("think", "<think>", "</think>"), ("mistral_think", "[THINK]", "[/THINK]"))
HARMONY_TOKENS = ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>")
HARMONY_TOOLS = ToolCallFormat(family="harmony", style="name_args", open="<|channel|>commentary to=functions.",
                               close="<|call|>", args_marker=" <|constrain|>json<|message|>", separator="",
                               parallel=False)
HARMONY_REASONING = ReasoningFormat("harmony", "<|channel|>analysis<|message|>", "<|end|>")
LLAMA_PYTHON_TAG = "<|python_tag|>"


class _Renderer:
    def __init__(self, template: str, bos: str, eos: str) -> None:
        self.template, self._bos, self._eos = template, bos, eos

    def __call__(self, messages: list[ChatMessage], tools: bool = False, generation: bool = True,
                 options: tuple[tuple[str, str], ...] = ()) -> str | None:
        try:
            return render_chat(self.template, messages, self._bos, self._eos, (PROBE_TOOL,) if tools else (),
                               options, generation)
        except Exception:  # noqa: BLE001 - a template that cannot render the probe does not support it
            return None


def detect_format(template: str | None, single_token: SingleToken, bos: str = "", eos: str = "",
                  special_id: SpecialId | None = None) -> OutputFormat:
    """The model's OutputFormat; the plain one where it has no template. `special_id`: which texts the
    vocabulary holds as special tokens (a grammar must name those by id); None: none."""
    if not template:
        return OutputFormat()
    render = _Renderer(template, bos, eos)
    harmony = all(token in template for token in ("<|channel|>", "<|message|>"))
    tools = _tool_format(render, harmony)
    reasoning = _reasoning_format(template, render, single_token, harmony)
    markers = _marker_texts(tools, reasoning, harmony, single_token)
    specials = _special_tokens(tools, reasoning, harmony, special_id) if special_id is not None else ()
    return OutputFormat(tools=tools, reasoning=reasoning, harmony=harmony, marker_texts=markers,
                        special_tokens=specials)


def starts_in_reasoning(prompt: str, output: OutputFormat) -> bool:
    """The rendered prompt opened the thinking itself (R1 distills, QwQ): the output starts inside it."""
    reasoning = output.reasoning
    return reasoning is not None and not output.harmony and prompt.rstrip().endswith(reasoning.open)


# ---------------------------------------------------------------- tools


def _tool_format(render: _Renderer, harmony: bool) -> ToolCallFormat | None:
    with_tools, without = render([QUESTION], tools=True), render([QUESTION])
    if with_tools is None or without is None or PROBE_NAME not in with_tools or PROBE_NAME in without:
        return None
    if harmony:
        return HARMONY_TOOLS
    turns = _assistant_turns(render, ChatMessage("assistant", PROBE_ANSWER),
                             ChatMessage("assistant", "", tool_calls=(PROBE_CALL,)))
    if turns is None or PROBE_NAME not in turns[1] or PROBE_ANSWER not in turns[0]:
        return None
    answer, one = turns
    end_of_turn = answer.split(PROBE_ANSWER, 1)[1].strip()
    found = _xml_call(one, end_of_turn) or _json_call(one, end_of_turn, render.template) or _name_args_call(one, end_of_turn)
    if found is None:
        return None
    two = _assistant_turns(render, ChatMessage("assistant", PROBE_ANSWER),
                           ChatMessage("assistant", "", tool_calls=(PROBE_CALL, PROBE_CALL)))
    return _with_parallel(found, two[1] if two else None)


def _assistant_turns(render: _Renderer, *messages: ChatMessage) -> list[str] | None:
    """What the template writes for each of these assistant messages after the question, less the
    header they share (`<|im_start|>assistant\n`, an empty thought the template adds)."""
    before = render([QUESTION], tools=True, generation=False)
    wholes = [render([QUESTION, message], tools=True, generation=False) for message in messages]
    if before is None or any(whole is None or not whole.startswith(before) for whole in wholes):
        return None
    turns = [whole[len(before) :] for whole in wholes if whole is not None]
    header = _common_prefix(turns)
    return [turn[len(header) :] for turn in turns]


def _common_prefix(texts: list[str]) -> str:
    shortest = min(texts, key=len)
    for size in range(len(shortest)):
        if any(text[size] != shortest[size] for text in texts):
            return shortest[:size]
    return shortest


def _json_object_with_name(text: str) -> tuple[int, int, dict[str, Any]] | None:
    """The JSON object in `text` that holds the probe's name as a value: (start, end, object)."""
    decoder = json.JSONDecoder()
    name_at = text.find(f'"{PROBE_NAME}"')
    for start in range(name_at, -1, -1):
        if text[start] != "{":
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(value, dict) and PROBE_NAME in value.values():
            return start, end, value
    return None


def _json_call(turn: str, end_of_turn: str, template: str) -> ToolCallFormat | None:
    found = _json_object_with_name(turn)
    if found is None:
        return None
    start, end, value = found
    name_key = next(key for key, item in value.items() if item == PROBE_NAME)
    arguments_key = next((key for key, item in value.items() if _is_probe_arguments(item)), "arguments")
    before, after = turn[:start].strip(), _strip_end(turn[end:], end_of_turn)
    array = before.endswith("[")
    if array:
        before, after = before[:-1].strip(), after.removeprefix("]").strip()
    extra = tuple(key for key in value if key not in (name_key, arguments_key))
    opens = (LLAMA_PYTHON_TAG,) if not before and LLAMA_PYTHON_TAG in template else ()
    return ToolCallFormat(family=_family(before, array), style="json_array" if array else "json", open=before,
                          close=after, name_key=name_key, arguments_key=arguments_key, extra_keys=extra,
                          alternative_opens=opens)


def _is_probe_arguments(value: Any) -> bool:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return False
    return value == PROBE_ARGUMENTS


def _xml_call(turn: str, end_of_turn: str) -> ToolCallFormat | None:
    """<tool_call>\n<function=name>\n<parameter=key>\nvalue\n</parameter>\n</function>\n</tool_call>."""
    head = f"<function={PROBE_NAME}>"
    at, end = turn.find(head), turn.find("</function>")
    parameter = f"<parameter={next(iter(PROBE_ARGUMENTS))}>"
    if at < 0 or end < 0 or parameter not in turn[at:end]:
        return None
    return ToolCallFormat(family="qwen3_xml", style="xml", open=turn[:at].strip(),
                          close=_strip_end(turn[end + len("</function>") :], end_of_turn))


def _name_args_call(turn: str, end_of_turn: str) -> ToolCallFormat | None:
    """[TOOL_CALLS]name[ARGS]{...}: the name stands bare, a marker between it and the arguments."""
    name_at = turn.find(PROBE_NAME)
    arguments_at = turn.find("{", name_at)
    if name_at < 0 or arguments_at < 0:
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(turn, arguments_at)
    except ValueError:
        return None
    if value != PROBE_ARGUMENTS:
        return None
    return ToolCallFormat(family="mistral_args" if "[TOOL_CALLS]" in turn else "name_args", style="name_args",
                          open=turn[:name_at].strip(), close=_strip_end(turn[end:], end_of_turn),
                          args_marker=turn[name_at + len(PROBE_NAME) : arguments_at])


def _strip_end(text: str, end_of_turn: str) -> str:
    text = text.strip()
    if end_of_turn and text.endswith(end_of_turn):
        text = text[: -len(end_of_turn)].strip()
    return text


def _family(open_marker: str, array: bool) -> str:
    if array or open_marker == "[TOOL_CALLS]":
        return "mistral"
    if not open_marker:
        return "llama3_json"
    return "hermes" if open_marker == "<tool_call>" else "json_marked"


def _with_parallel(found: ToolCallFormat, two: str | None) -> ToolCallFormat:
    """The separator between two calls in one message; not parallel where the template refuses two."""
    if two is None or two.count(PROBE_NAME) < 2:
        return replace(found, parallel=False)
    first = two.find(PROBE_NAME)
    second = two.find(PROBE_NAME, first + len(PROBE_NAME))
    between = two[first:second]
    if found.style == "json_array":
        return replace(found, separator=", ")
    if found.style == "name_args" and not found.close:
        return replace(found, separator="")  # [TOOL_CALLS]a[ARGS]{…}[TOOL_CALLS]b[ARGS]{…}
    if found.close and found.close in between and found.open and found.open in between:
        gap = between[between.find(found.close) + len(found.close) : between.rfind(found.open)]
        return replace(found, separator=gap)
    return found


# ---------------------------------------------------------------- reasoning


def _reasoning_format(template: str, render: _Renderer, single_token: SingleToken,
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


def _switches(render: _Renderer) -> tuple[str, ...]:
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


MARKER_LIKE = re.compile(r"<\|[^<>|]*\|>|<｜[^<>｜]*｜>|\[/?[A-Z_]+\]|</?[A-Za-z_]+>")


def _special_tokens(tools: ToolCallFormat | None, reasoning: ReasoningFormat | None, harmony: bool,
                    special_id: SpecialId) -> tuple[tuple[str, int], ...]:
    """Each marker, and each marker-like piece of one, that is a special token of the vocabulary."""
    texts: list[str] = [*HARMONY_TOKENS, "<|call|>"] if harmony else []
    for call_format in (tools, FALLBACK_TOOL_FORMAT):
        if call_format is not None:
            texts += [call_format.open, call_format.close, call_format.args_marker, call_format.separator,
                      *call_format.alternative_opens]
    if reasoning is not None:
        texts += [reasoning.open, reasoning.close]
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
        candidates += [reasoning.open, reasoning.close]
    if tools is not None and not harmony:
        candidates += [tools.open, tools.close, tools.args_marker, *tools.alternative_opens]
    # The fallback prompt's Hermes markers are often single tokens too (Qwen's vocabulary has them)
    candidates += ["<tool_call>", "</tool_call>"]
    return tuple(dict.fromkeys(text for text in candidates if text and single_token(text)))


"""How a model writes tool calls, found by rendering probe messages through its chat template.

Where the tool shows up in the rendered prompt the template renders tools, and a probe assistant
message that calls it shows how a call is written: the text before the call's JSON (or its name) is
the opening marker, the text after it (less the end of the turn, seen on a plain answer) the closing
one, the JSON keys those of the name and the arguments. Two calls in one message give the separator
(a template that refuses two makes `parallel` False), and where the two calls share a wrapper
(DeepSeek's `<｜tool▁calls▁begin｜>`…`<｜tool▁calls▁end｜>` around its per-call markers) the wrapper.
A template that writes calls but not the tools' definitions (DeepSeek's) gets `renders_tools` False:
the definitions then go in a system prompt that shows the template's own way of writing a call.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from engine.chat_template import render_chat
from engine.parsing.formats import MARKER_LIKE, ToolCallFormat
from engine.protocol import ChatMessage, ToolCall, ToolSpec

PROBE_NAME = "hearth_probe_tool"
PROBE_ARGUMENTS = {"probe_argument": "probe value"}
PROBE_TOOL = ToolSpec(PROBE_NAME, "A probe.", json.dumps(
    {"type": "object", "properties": {"probe_argument": {"type": "string"}}, "required": ["probe_argument"]}))
PROBE_ANSWER = "hearth probe answer"
QUESTION = ChatMessage("user", "hearth probe question")
# Mistral's templates want ids of 9 letters and digits
PROBE_CALL = ToolCall("a1b2c3d4e", PROBE_NAME, json.dumps(PROBE_ARGUMENTS))

HARMONY_TOOLS = ToolCallFormat(family="harmony", style="name_args", open="<|channel|>commentary to=functions.",
                               close="<|call|>", args_marker=" <|constrain|>json<|message|>", separator="",
                               parallel=False)
LLAMA_PYTHON_TAG = "<|python_tag|>"


class Renderer:
    def __init__(self, template: str, bos: str, eos: str) -> None:
        self.template, self._bos, self._eos = template, bos, eos

    def __call__(self, messages: list[ChatMessage], tools: bool = False, generation: bool = True,
                 options: tuple[tuple[str, str], ...] = ()) -> str | None:
        try:
            return render_chat(self.template, messages, self._bos, self._eos, (PROBE_TOOL,) if tools else (),
                               options, generation)
        except Exception:  # noqa: BLE001 - a template that cannot render the probe does not support it
            return None


def tool_format(render: Renderer, harmony: bool) -> ToolCallFormat | None:
    with_tools, without = render([QUESTION], tools=True), render([QUESTION])
    if with_tools is None or without is None or PROBE_NAME in without:
        return None
    renders_tools = PROBE_NAME in with_tools
    if harmony:
        return HARMONY_TOOLS if renders_tools else None
    turns = _assistant_turns(render, ChatMessage("assistant", PROBE_ANSWER),
                             ChatMessage("assistant", "", tool_calls=(PROBE_CALL,)))
    if turns is None or PROBE_NAME not in turns[1] or PROBE_ANSWER not in turns[0]:
        return None
    answer, one = turns
    end_of_turn = answer.split(PROBE_ANSWER, 1)[1].strip()
    found = (_xml_call(one, end_of_turn) or _gemma_call(one, end_of_turn) or _json_call(one, end_of_turn, render.template)
             or _name_args_call(one, end_of_turn))
    if found is None:
        return None
    two = _assistant_turns(render, ChatMessage("assistant", PROBE_ANSWER),
                           ChatMessage("assistant", "", tool_calls=(PROBE_CALL, PROBE_CALL)))
    return replace(_with_parallel(found, two[1] if two else None), renders_tools=renders_tools)


def _assistant_turns(render: Renderer, *messages: ChatMessage) -> list[str] | None:
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


def _gemma_call(turn: str, end_of_turn: str) -> ToolCallFormat | None:
    """<|tool_call>call:name{key:<|"|>value<|"|>}<tool_call|>, then <|tool_response> for the result."""
    body = f'{PROBE_NAME}{{{next(iter(PROBE_ARGUMENTS))}:<|"|>{next(iter(PROBE_ARGUMENTS.values()))}<|"|>}}'
    at = turn.find(body)
    if at < 0:
        return None
    after = _pieces(_strip_end(turn[at + len(body) :], end_of_turn))
    if not after:
        return None
    return ToolCallFormat(family="gemma4", style="gemma", open=turn[:at].strip(), close=after[0], separator="",
                          calls_close="".join(after[1:]))


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
    family = "mistral_args" if "[TOOL_CALLS]" in turn else "deepseek" if "tool▁call" in turn else "name_args"
    return ToolCallFormat(family=family, style="name_args", open=turn[:name_at].strip(),
                          close=_strip_end(turn[end:], end_of_turn), args_marker=turn[name_at + len(PROBE_NAME) : arguments_at])


def _strip_end(text: str, end_of_turn: str) -> str:
    """What a call's text is up to the end of its turn (a template may write more after it: R1's
    empty assistant message)."""
    if end_of_turn and end_of_turn in text:
        text = text[: text.find(end_of_turn)]
    return text.strip()


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
    return _wrapped(found, _after_arguments(found, between)) or found


def _after_arguments(found: ToolCallFormat, first_call: str) -> str:
    """The text of `first_call` (from its name to the next call's name) after its arguments."""
    start = first_call.find("{")
    try:
        _, end = json.JSONDecoder().raw_decode(first_call, start)
    except ValueError:
        return ""
    return first_call[end:]


def _wrapped(found: ToolCallFormat, gap: str) -> ToolCallFormat | None:
    """Calls inside one wrapper: between two calls stand the first's own close and the second's own open
    (`<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>`), each a part of the whole answer's close and open, whose
    rest is the wrapper (`<｜tool▁calls▁end｜>`, `<｜tool▁calls▁begin｜>`). Split at marker boundaries."""
    gap_pieces, close_pieces, open_pieces = _pieces(gap.strip()), _pieces(found.close), _pieces(found.open)
    shared = 0
    while shared < min(len(gap_pieces), len(close_pieces)) and gap_pieces[shared] == close_pieces[shared]:
        shared += 1
    rest, tail = gap_pieces[shared:], 0
    while tail < min(len(rest), len(open_pieces)) and rest[len(rest) - 1 - tail] == open_pieces[len(open_pieces) - 1 - tail]:
        tail += 1
    if not shared or not tail or (shared == len(close_pieces) and tail == len(open_pieces)):
        return None
    own_open, own_close = "".join(open_pieces[len(open_pieces) - tail :]), "".join(close_pieces[:shared])
    return replace(found, open=own_open, close=own_close, separator="".join(rest[: len(rest) - tail]),
                   calls_open="".join(open_pieces[: len(open_pieces) - tail]),
                   calls_close="".join(close_pieces[shared:]))


def _pieces(text: str) -> list[str]:
    """`text` cut into its marker-like pieces and the text between them."""
    return [piece for piece in re.split(f"({MARKER_LIKE.pattern})", text) if piece]



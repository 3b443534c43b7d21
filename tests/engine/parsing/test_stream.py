"""The streaming output parser per format on hand-written outputs, every marker split at every boundary."""

from __future__ import annotations

import json
import random

import pytest

from engine.parsing.detect_calls import HARMONY_TOOLS
from engine.parsing.formats import (
    FALLBACK_TOOL_FORMAT,
    OutputFormat,
    ReasoningFormat,
    ToolCallFormat,
)
from engine.parsing.harmony import HarmonyParser
from engine.parsing.parts import AnswerText, CallArguments, CallStarted, ReasoningPart
from engine.parsing.stream import OutputParser

THINK = ReasoningFormat("think", "<think>", "</think>")
MISTRAL_THINK = ReasoningFormat("mistral_think", "[THINK]", "[/THINK]")
HERMES = ToolCallFormat("hermes", "json", "<tool_call>", "</tool_call>")
LLAMA = ToolCallFormat("llama3_json", "json", "", arguments_key="parameters", alternative_opens=("<|python_tag|>",),
                       parallel=False)
MISTRAL = ToolCallFormat("mistral", "json_array", "[TOOL_CALLS]", separator=", ", extra_keys=("id",))
MISTRAL_ARGS = ToolCallFormat("mistral_args", "name_args", "[TOOL_CALLS]", args_marker="[ARGS]", separator="")
MARKERS = ("<think>", "</think>", "[THINK]", "[/THINK]", "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "[ARGS]",
           "<|python_tag|>", "<|channel|>", "<|message|>", "<|end|>", "<|start|>")
WEATHER = ("get_weather", {"city": "Paris", "unit": "celsius"})
TIME = ("get_time", {"zone": "Europe/Paris", "nested": {"list": [1, "}", {"x": "\"]"}]}})

# (name, output format, call format, starts inside the thinking, text, reasoning, answer, calls)
CASES = [
    ("think", OutputFormat(reasoning=THINK), None, False,
     "<think>\nLet me add: 2 + 2 < 5.\n</think>\n\nThe answer is 4.", "Let me add: 2 + 2 < 5.", "The answer is 4.", []),
    ("think, no thinking", OutputFormat(reasoning=THINK), None, False, "Just <b>an</b> answer.", "",
     "Just <b>an</b> answer.", []),
    ("think, thinking only", OutputFormat(reasoning=THINK), None, False, "<think>\nOnly thoughts.\n</think>",
     "Only thoughts.", "", []),
    ("opened by the prompt", OutputFormat(reasoning=THINK), None, True, "Okay, the user asks.\n</think>\n\nHello!",
     "Okay, the user asks.", "Hello!", []),
    ("a later <think> is text", OutputFormat(reasoning=THINK), None, False, "Use the <think> tag.", "",
     "Use the <think> tag.", []),
    ("mistral think", OutputFormat(reasoning=MISTRAL_THINK), None, False, "[THINK]Short.[/THINK]Answer [x].",
     "Short.", "Answer [x].", []),
    ("hermes", OutputFormat(tools=HERMES), HERMES, False,
     'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n'
     "</tool_call>", "", "Let me check.\n", [WEATHER]),
    ("text after a call", OutputFormat(tools=HERMES), HERMES, False,
     'Before <tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}</tool_call>\n\n'
     "After.", "", "Before After.", [WEATHER]),
    ("hermes parallel", OutputFormat(tools=HERMES), HERMES, False,
     '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}\n</tool_call>\n'
     '<tool_call>\n{"arguments": {"zone": "Europe/Paris", "nested": {"list": [1, "}", {"x": "\\"]"}]}}, '
     '"name": "get_time"}\n</tool_call>', "", "", [WEATHER, TIME]),
    ("think then call", OutputFormat(tools=HERMES, reasoning=THINK), HERMES, False,
     '<think>\nThe weather tool.\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": '
     '{"city": "Paris", "unit": "celsius"}}\n</tool_call>', "The weather tool.", "", [WEATHER]),
    ("hermes, quoted arguments", OutputFormat(tools=HERMES), HERMES, False,
     '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\", \\"unit\\": \\"celsius\\"}"}'
     "</tool_call>", "", "", [WEATHER]),
    ("llama json", OutputFormat(tools=LLAMA), LLAMA, False,
     '{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}', "", "", [WEATHER]),
    ("llama python tag", OutputFormat(tools=LLAMA), LLAMA, False,
     '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "unit": "celsius"}}', "", "", [WEATHER]),
    ("llama, a JSON answer", OutputFormat(tools=LLAMA), LLAMA, False, ' {"temperature": 21}', "",
     ' {"temperature": 21}', []),
    ("mistral array", OutputFormat(tools=MISTRAL), MISTRAL, False,
     '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}, "id": "a1b2c3d4e"}, '
     '{"name": "get_time", "arguments": {"zone": "Europe/Paris", "nested": {"list": [1, "}", {"x": "\\"]"}]}}}]',
     "", "", [WEATHER, TIME]),
    ("mistral name args", OutputFormat(tools=MISTRAL_ARGS), MISTRAL_ARGS, False,
     'Sure.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "unit": "celsius"}[TOOL_CALLS]get_time[ARGS]'
     '{"zone": "Europe/Paris", "nested": {"list": [1, "}", {"x": "\\"]"}]}}', "", "Sure.", [WEATHER, TIME]),
    ("fallback", OutputFormat(reasoning=THINK), FALLBACK_TOOL_FORMAT, True,
     'Need weather.</think><tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'
     "</tool_call>", "Need weather.", "", [WEATHER]),
    ("tools off: a call is text", OutputFormat(tools=HERMES), None, False, "<tool_call>{}</tool_call>", "",
     "<tool_call>{}</tool_call>", []),
]
HARMONY_CASES = [
    ("harmony", "<|channel|>analysis<|message|>User greets. Reply.<|end|><|start|>assistant<|channel|>final"
     "<|message|>Hello <|there|>!", "User greets. Reply.", "Hello <|there|>!", []),
    ("harmony call", "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
     'to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "unit": "celsius"}', "Need weather.",
     "", [WEATHER]),
    ("harmony, recipient first", '<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>'
     '{"city": "Paris", "unit": "celsius"}', "", "", [WEATHER]),
]


def run(case: tuple, pieces: list[str]) -> tuple[OutputParser | HarmonyParser, list]:
    parser: OutputParser | HarmonyParser
    if case[1] == "harmony":
        parser = HarmonyParser()
    else:
        parser = OutputParser(case[1], case[2], case[3])
    parts = []
    for piece in pieces:
        parts += parser.feed(piece)
    return parser, parts + parser.finish()


def check(case: tuple, pieces: list[str]) -> None:
    reasoning, answer, calls = case[-3:]
    parser, parts = run(case, pieces)
    shown = "".join(p.text for p in parts if isinstance(p, (AnswerText, ReasoningPart)))
    assert "".join(p.text for p in parts if isinstance(p, ReasoningPart)) == reasoning == parser.reasoning_text
    assert "".join(p.text for p in parts if isinstance(p, AnswerText)) == answer == parser.answer
    assert [(call.name, json.loads(call.arguments)) for call in parser.calls] == calls
    started = [p for p in parts if isinstance(p, CallStarted)]
    assert [(p.index, p.name) for p in started] == [(i, name) for i, (name, _) in enumerate(calls)]
    for index, call in enumerate(parser.calls):
        fragments = "".join(p.text for p in parts if isinstance(p, CallArguments) and p.index == index)
        assert fragments == call.arguments, "the streamed fragments join to the call's arguments"
        assert call.id == started[index].call_id
    for marker in MARKERS:
        if marker not in reasoning + answer:
            assert marker not in shown, f"{marker} leaked into the text"


ALL = [(name, fmt, tools, inside, text, r, a, c) for name, fmt, tools, inside, text, r, a, c in CASES] + [
    (name, "harmony", None, False, text, r, a, c) for name, text, r, a, c in HARMONY_CASES]


@pytest.mark.parametrize("case", ALL, ids=[case[0] for case in ALL])
def test_whole_and_every_character_apart(case: tuple) -> None:
    text = case[4]
    check(case, [text])
    check(case, list(text))


@pytest.mark.parametrize("case", ALL, ids=[case[0] for case in ALL])
def test_split_at_every_boundary(case: tuple) -> None:
    text = case[4]
    for cut in range(1, len(text)):
        check(case, [text[:cut], text[cut:]])


@pytest.mark.parametrize("case", ALL, ids=[case[0] for case in ALL])
def test_pieces_of_token_sizes(case: tuple) -> None:
    """Tokens are 1 to 6 characters here: 50 fixed random tokenizations of each output."""
    text, rng = case[4], random.Random(7)
    for _ in range(50):
        pieces, at = [], 0
        while at < len(text):
            size = rng.randint(1, 6)
            pieces.append(text[at : at + size])
            at += size
        check(case, pieces)


def test_half_open_marker_at_the_end_is_dropped() -> None:
    for cut in range(1, len("<tool_call>")):
        parser = OutputParser(OutputFormat(tools=HERMES), HERMES)
        parts = parser.feed("Checking " + "<tool_call>"[:cut]) + parser.finish()
        assert "".join(p.text for p in parts if isinstance(p, AnswerText)) == "Checking "
        assert parser.calls == []


def test_unclosed_thinking_stays_reasoning() -> None:
    parser = OutputParser(OutputFormat(reasoning=THINK), None, in_reasoning=True)
    parts = parser.feed("Still thinking about it") + parser.feed("</thi") + parser.finish()
    assert "".join(p.text for p in parts if isinstance(p, ReasoningPart)) == "Still thinking about it"
    assert not any(isinstance(p, AnswerText) for p in parts)
    assert not parser.reasoning_closed


def test_call_cut_by_the_token_limit_is_marked_cut() -> None:
    """Name known, arguments cut: recorded as it was and marked, for the scheduler to leave out."""
    parser = OutputParser(OutputFormat(tools=HERMES), HERMES)
    parts = parser.feed('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par') + parser.finish()
    assert [c.name for c in parser.calls] == ["get_weather"] and parser.cut_call
    assert parser.calls[0].arguments == '{"city": "Par'
    assert not any(isinstance(p, AnswerText) for p in parts)
    whole = OutputParser(OutputFormat(tools=HERMES), HERMES)
    whole.feed('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>')
    whole.finish()
    assert len(whole.calls) == 1 and not whole.cut_call


def test_whitespace_before_a_call_is_not_the_answer_and_before_text_goes_with_it() -> None:
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    parser = OutputParser(OutputFormat(tools=HERMES), HERMES)
    parts = [part for piece in ["\n", "\n ", call] for part in parser.feed(piece)] + parser.finish()
    assert parser.answer == "" and not any(isinstance(p, AnswerText) for p in parts)
    assert [c.name for c in parser.calls] == ["get_weather"]
    text = OutputParser(OutputFormat(tools=HERMES), HERMES)
    shown = [part for piece in ["\n", " ", "Hi", " there"] for part in text.feed(piece)] + text.finish()
    assert text.answer == "\n Hi there" and "".join(p.text for p in shown if isinstance(p, AnswerText)) == text.answer
    blank = OutputParser(OutputFormat(tools=HERMES), HERMES)
    assert [p.text for p in blank.feed("\n\n") + blank.finish()] == ["\n\n"]  # nothing else came: nothing lost


def test_call_without_a_whole_name_is_dropped() -> None:
    parser = OutputParser(OutputFormat(tools=HERMES), HERMES)
    parts = parser.feed('<tool_call>\n{"name": "get_wea') + parser.finish()
    assert parser.calls == [] and parts == []


def test_closing_the_thinking_by_budget() -> None:
    parser = OutputParser(OutputFormat(reasoning=THINK), None, in_reasoning=True)
    parser.feed("Thinking hard")
    assert parser.in_reasoning
    assert parser.close_reasoning() == "\n</think>\n\n"
    parts = parser.feed("Answer.") + parser.finish()
    assert parser.reasoning_text == "Thinking hard" and [p.text for p in parts] == ["Answer."]


def test_harmony_closing_by_budget_opens_the_final_channel() -> None:
    parser = HarmonyParser()
    parser.feed("<|channel|>analysis<|message|>Hmm")
    assert parser.in_reasoning
    assert parser.close_reasoning().endswith("<|channel|>final<|message|>")
    parts = parser.feed("Hi.") + parser.finish()
    assert [p.text for p in parts] == ["Hi."] and parser.reasoning_text == "Hmm"


def test_harmony_closing_by_budget_before_a_grammar_leaves_the_header_to_it() -> None:
    parser = HarmonyParser()
    parser.feed("<|channel|>analysis<|message|>Hmm")
    assert parser.close_reasoning(header_follows=True) == "<|end|><|start|>assistant"
    assert not parser.in_reasoning
    parts = parser.feed('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Oslo"}')
    parts += parser.finish()
    assert [(c.name, c.arguments) for c in parser.calls] == [("get_weather", '{"city": "Oslo"}')]
    assert parser.answer == "" and parser.reasoning_text == "Hmm" and parts


def test_harmony_tools_format_is_a_name_args_call() -> None:
    assert HARMONY_TOOLS.style == "name_args" and HARMONY_TOOLS.close == "<|call|>"

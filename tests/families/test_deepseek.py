"""DeepSeek's own tool-call format (V3.1, and R1 distills' template): calls inside one wrapper, found from
the template; a template that writes calls but not the tools gets them in a system prompt in that format."""

from __future__ import annotations

import json

import pytest

from engine.chat_template import render_chat
from engine.parsing.detect import detect_format
from engine.parsing.prompt import prepare_turn
from engine.parsing.stream import OutputParser
from engine.protocol import ChatMessage, Submit, ToolCall, ToolSpec
from tests.families.sources import fixture_file

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
V31 = "deepseek-ai-DeepSeek-V3.1.jinja"
R1 = "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"
WEATHER = ToolSpec("get_weather", "The weather.", json.dumps({"type": "object", "properties": {"city": {"type": "string"}}}))
CALLS = {
    V31: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Paris\"}<｜tool▁call▁end｜>"
         "<｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    R1: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\"}\n```"
        "<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜>"
        "<｜tool▁calls▁end｜>",
}


def template(name: str) -> str:
    return fixture_file(name).read_text()


def output(name: str):  # -> OutputFormat
    return detect_format(template(name), lambda text: False, BOS, EOS)


@pytest.mark.parametrize("name", [V31, R1])
def test_the_wrapper_and_each_calls_markers_are_found(name: str) -> None:
    tools = output(name).tools
    assert tools is not None and tools.family == "deepseek" and not tools.renders_tools
    assert (tools.calls_open, tools.calls_close) == ("<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>")
    assert tools.open.startswith("<｜tool▁call▁begin｜>") and tools.close.endswith("<｜tool▁call▁end｜>")


@pytest.mark.parametrize("name", [V31, R1])
@pytest.mark.parametrize("piece", [1, 6, 10_000])
def test_two_calls_in_one_wrapper_are_read_however_they_stream(name: str, piece: int) -> None:
    parser = OutputParser(output(name), output(name).tools)
    text = "Let me check." + CALLS[name]
    for start in range(0, len(text), piece):
        parser.feed(text[start : start + piece])
    parser.finish()
    assert parser.answer == "Let me check."
    assert [(c.name, json.loads(c.arguments)) for c in parser.calls] == [("get_weather", {"city": "Paris"}),
                                                                         ("get_time", {})]


def test_the_tools_go_in_a_system_prompt_in_the_models_own_format_and_results_render_natively() -> None:
    def render(messages, tools, options):  # type: ignore[no-untyped-def]
        return render_chat(template(V31), messages, BOS, EOS, tools, options)

    history = (ChatMessage("user", "Weather in Paris?"),
               ChatMessage("assistant", "", tool_calls=(ToolCall("c1", "get_weather", '{"city": "Paris"}'),)),
               ChatMessage("tool", '{"celsius": 21}', tool_call_id="c1", name="get_weather"))
    prompt, setup = prepare_turn(render, output(V31), Submit("chat", history, tools=(WEATHER,)))
    system = prompt[: prompt.index("<｜User｜>")]
    assert '"name": "get_weather"' in system
    assert "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜><function name><｜tool▁sep｜>" in system
    assert prompt.endswith('<｜tool▁output▁begin｜>{"celsius": 21}<｜tool▁output▁end｜>')
    assert 'get_weather<｜tool▁sep｜>{"city": "Paris"}<｜tool▁call▁end｜>' in prompt[len(system) :]
    assert setup.tools == output(V31).tools

"""A turn's prompt with tools, tool history, reasoning history and template options, on real templates."""

from __future__ import annotations

import pytest

from engine.chat_template import ChatTemplateError, render_chat
from engine.parsing.detect import detect_format
from engine.parsing.formats import FALLBACK_TOOL_FORMAT
from engine.parsing.prompt import prepare_turn
from engine.protocol import ChatMessage, Submit, ToolCall
from tests.engine.parsing.test_detect import QUESTION, WEATHER, detected, template

CALL = ToolCall("a1b2c3d4e", "get_weather", '{"city": "Paris"}')
TOOL_LOOP = (QUESTION, ChatMessage("assistant", "", reasoning="I need the weather.", tool_calls=(CALL,)),
             ChatMessage("tool", "21 C, sunny", tool_call_id="a1b2c3d4e", name="get_weather"))


def turn(name: str, messages: tuple[ChatMessage, ...] = (QUESTION,), **submit: object) -> tuple[str, object]:
    text = template(name)

    def render(messages, tools, options):  # type: ignore[no-untyped-def]
        return render_chat(text, messages, "<s>", "</s>", tools, options)

    return prepare_turn(render, detected(name), Submit("chat", messages, **submit))  # type: ignore[arg-type]


def test_tools_go_through_a_template_that_renders_them() -> None:
    prompt, setup = turn("Qwen-Qwen3-0.6B", tools=(WEATHER,))
    assert "<tools>" in prompt and '"name": "get_weather"' in prompt
    assert setup.tools is not None and setup.tools.family == "hermes"  # type: ignore[attr-defined]


def test_tool_choice_none_renders_no_tools() -> None:
    prompt, setup = turn("Qwen-Qwen3-0.6B", tools=(WEATHER,), tool_choice="none")
    assert "get_weather" not in prompt and setup.tools is None  # type: ignore[attr-defined]


def test_tool_loop_in_a_template_with_tool_support() -> None:
    prompt, _ = turn("Qwen-Qwen3-0.6B", TOOL_LOOP, tools=(WEATHER,))
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in prompt
    assert "<tool_response>\n21 C, sunny\n</tool_response>" in prompt
    assert "I need the weather." in prompt, "Qwen3 keeps the thinking of the tool loop still going on"


def test_fallback_prompt_where_the_template_has_no_tools() -> None:
    prompt, setup = turn("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", TOOL_LOOP, tools=(WEATHER,))
    assert setup.tools == FALLBACK_TOOL_FORMAT  # type: ignore[attr-defined]
    assert '{"name": "get_weather", "description": "The weather in a city."' in prompt
    assert "inside <tool_call></tool_call> tags" in prompt
    assert '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>' in prompt
    assert "Tool result for call a1b2c3d4e (get_weather):\n21 C, sunny" in prompt
    assert setup.in_reasoning, "the R1 distill's prompt opens the thinking"  # type: ignore[attr-defined]


def test_earlier_thinking_is_left_out_where_the_template_drops_it() -> None:
    history = (QUESTION, ChatMessage("assistant", "Sunny.", reasoning="SECRET THOUGHT"), ChatMessage("user", "Thanks"))
    for name in ("Qwen-Qwen3-0.6B", "Qwen-QwQ-32B", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "openai-gpt-oss-120b"):
        prompt, _ = turn(name, history)
        assert "SECRET THOUGHT" not in prompt and "Sunny." in prompt, name


def test_think_off_through_the_template_switch() -> None:
    on, setup_on = turn("Qwen-Qwen3-0.6B")
    off, setup_off = turn("Qwen-Qwen3-0.6B", template_options=(("enable_thinking", "false"),))
    assert off.endswith("<think>\n\n</think>\n\n") and not on.endswith("</think>\n\n")
    assert not setup_off.in_reasoning  # type: ignore[attr-defined]


def test_think_off_without_a_switch_is_the_empty_thought() -> None:
    on, setup_on = turn("Qwen-QwQ-32B")
    off, setup_off = turn("Qwen-QwQ-32B", template_options=(("enable_thinking", "false"),))
    assert on.endswith("<think>\n") and setup_on.in_reasoning  # type: ignore[attr-defined]
    assert off == on + "\n</think>\n\n" and not setup_off.in_reasoning  # type: ignore[attr-defined]


def test_reasoning_effort_reaches_the_template() -> None:
    low, _ = turn("openai-gpt-oss-120b", template_options=(("reasoning_effort", '"low"'),))
    assert "Reasoning: low" in low


def test_template_options_cannot_replace_the_renderer_variables() -> None:
    with pytest.raises(ChatTemplateError, match="messages"):
        turn("Qwen-Qwen3-0.6B", template_options=(("messages", "[]"),))


def test_mistral_tool_history() -> None:
    prompt, setup = turn("mistralai-Mistral-Nemo-Instruct-2407", TOOL_LOOP, tools=(WEATHER,))
    assert '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2c3d4e"}]' in prompt
    # the template writes the result as it is (it expects JSON text)
    assert '[TOOL_RESULTS]{"content": 21 C, sunny, "call_id": "a1b2c3d4e"}[/TOOL_RESULTS]' in prompt
    assert setup.tools is not None and setup.tools.extra_keys == ("id",)  # type: ignore[attr-defined]


def test_fallback_prompt_where_the_template_refuses_a_system_message() -> None:
    refuses = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
               "{% endif %}<turn>{{ m['role'] }}\n{{ m['content'] }}</turn>\n{% endfor %}<turn>model\n")

    def render(messages, tools, options):  # type: ignore[no-untyped-def]
        return render_chat(refuses, messages, "", "", tools, options)

    prompt, setup = prepare_turn(render, detect_format(refuses, lambda text: False),
                                 Submit("chat", (QUESTION,), tools=(WEATHER,)))
    assert prompt.startswith("<turn>user\nYou can call functions") and QUESTION.content in prompt
    assert setup.tools == FALLBACK_TOOL_FORMAT

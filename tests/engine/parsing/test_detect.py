"""Formats found from real chat templates (tests/engine/parsing/templates) and vocabularies, and their
rendered outputs read back by the parser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.chat_template import render_chat
from engine.parsing.detect import detect_format, starts_in_reasoning
from engine.parsing.formats import OutputFormat
from engine.parsing.harmony import HarmonyParser
from engine.parsing.stream import OutputParser
from engine.protocol import ChatMessage, ToolCall, ToolSpec

TEMPLATES = Path(__file__).parent / "templates"
# The markers each family's vocabulary has as single tokens (as their tokenizers do)
QWEN_VOCAB = {"<think>", "</think>", "<tool_call>", "</tool_call>"}
VOCABULARIES = {
    "Qwen-Qwen3-0.6B": QWEN_VOCAB,
    "Qwen-QwQ-32B": QWEN_VOCAB,
    "Qwen-Qwen2.5-7B-Instruct": {"<tool_call>", "</tool_call>"},
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": {"<think>", "</think>"},
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": {"<tool_call>", "</tool_call>"},
    "meta-llama-Llama-3.1-8B-Instruct": {"<|python_tag|>"},
    "mistralai-Mistral-Nemo-Instruct-2407": {"[TOOL_CALLS]"},
    "unsloth-mistral-Devstral-Small-2507": {"[TOOL_CALLS]", "[ARGS]"},
    "openai-gpt-oss-120b": {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|constrain|>", "<|call|>"},
    "mistral-think": {"[THINK]", "[/THINK]", "[TOOL_CALLS]"},
}
# template -> (tool family, open, close, arguments key, parallel, reasoning family, capabilities)
EXPECTED = {
    "Qwen-Qwen3-0.6B": ("hermes", "<tool_call>", "</tool_call>", "arguments", True, "think",
                        ("tools", "reasoning", "thinking_switch")),
    "Qwen-QwQ-32B": ("hermes", "<tool_call>", "</tool_call>", "arguments", True, "think",
                     ("tools", "reasoning", "thinking_switch")),
    "Qwen-Qwen2.5-7B-Instruct": ("hermes", "<tool_call>", "</tool_call>", "arguments", True, None, ("tools",)),
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B": (None, "", "", "", False, "think", ("reasoning", "thinking_switch")),
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use": ("hermes", "<tool_call>", "</tool_call>", "arguments", True,
                                                    None, ("tools",)),
    "meta-llama-Llama-3.1-8B-Instruct": ("llama3_json", "", "", "parameters", False, None, ("tools",)),
    "mistralai-Mistral-Nemo-Instruct-2407": ("mistral", "[TOOL_CALLS]", "", "arguments", True, None, ("tools",)),
    "unsloth-mistral-Devstral-Small-2507": ("mistral_args", "[TOOL_CALLS]", "", "arguments", True, None, ("tools",)),
    "openai-gpt-oss-120b": ("harmony", "<|channel|>commentary to=functions.", "<|call|>", "arguments", False,
                            "harmony", ("tools", "reasoning", "reasoning_effort")),
    "mistral-think": (None, "", "", "", False, "mistral_think", ("reasoning",)),
}
WEATHER = ToolSpec("get_weather", "The weather in a city.", json.dumps(
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}))
QUESTION = ChatMessage("user", "What is the weather in Paris?")


def template(name: str) -> str:
    return (TEMPLATES / f"{name}.jinja").read_text()


def detected(name: str) -> OutputFormat:
    vocabulary = VOCABULARIES[name]
    return detect_format(template(name), vocabulary.__contains__, "<s>", "</s>")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_format_from_the_template(name: str) -> None:
    family, open_marker, close, arguments_key, parallel, reasoning, capabilities = EXPECTED[name]
    found = detected(name)
    if family is None:
        assert found.tools is None
    else:
        assert found.tools is not None
        assert (found.tools.family, found.tools.open, found.tools.close) == (family, open_marker, close)
        assert (found.tools.arguments_key, found.tools.parallel) == (arguments_key, parallel)
    assert (found.reasoning.family if found.reasoning else None) == reasoning
    assert found.capabilities == capabilities
    assert set(found.marker_texts) <= VOCABULARIES[name]


def test_no_template_is_plain() -> None:
    assert detect_format(None, lambda text: True) == OutputFormat()


def test_prompt_that_opens_the_thinking() -> None:
    for name, opens in (("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", True), ("Qwen-QwQ-32B", True),
                        ("Qwen-Qwen3-0.6B", False)):
        found = detected(name)
        prompt = render_chat(template(name), [QUESTION], "<s>", "</s>")
        assert starts_in_reasoning(prompt, found) is opens
    assert detected("Qwen-QwQ-32B").reasoning.empty_thought == "\n</think>\n\n"  # type: ignore[union-attr]
    assert detected("Qwen-Qwen3-0.6B").reasoning.empty_thought == ""  # type: ignore[union-attr]  # it has a switch


def model_output(name: str, message: ChatMessage) -> str:
    """What the model would have written for `message`: the template's rendering of it after the
    generation prompt, less the end of the turn."""
    text = template(name)
    prompt = render_chat(text, [QUESTION], "<s>", "</s>", (WEATHER,))
    whole = render_chat(text, [QUESTION, message], "<s>", "</s>", (WEATHER,), add_generation_prompt=False)
    if prompt.rstrip().endswith("<think>"):  # the prompt opened a thought the history does not show
        shared = prompt.rstrip().rfind("<think>")
        assert whole[:shared] == prompt[:shared]
        return "I will call the tool.\n</think>\n\n" + model_output_tail(whole[shared:])
    assert whole.startswith(prompt)
    return model_output_tail(whole[len(prompt) :])


def model_output_tail(output: str) -> str:
    for end in ("<|im_end|>", "<|eot_id|>", "</s>", "<|call|>", "<|return|>", "<|end|>", "<｜end▁of▁sentence｜>"):
        output = output.rstrip().removesuffix(end)
    return output


def parse(name: str, output: str, pieces: int = 1) -> OutputParser | HarmonyParser:
    found = detected(name)
    prompt = render_chat(template(name), [QUESTION], "<s>", "</s>", (WEATHER,))
    parser: OutputParser | HarmonyParser = (
        HarmonyParser() if found.harmony else OutputParser(found, found.tools, starts_in_reasoning(prompt, found)))
    for at in range(0, len(output), pieces):
        parser.feed(output[at : at + pieces])
    parser.finish()
    return parser


CALLS = (ToolCall("a1b2c3d4e", "get_weather", '{"city": "Paris"}'),)


@pytest.mark.parametrize("name", [n for n, e in sorted(EXPECTED.items()) if e[0] is not None])
def test_rendered_call_reads_back(name: str) -> None:
    output = model_output(name, ChatMessage("assistant", "", tool_calls=CALLS))
    for pieces in (1, 3, len(output)):
        parser = parse(name, output, pieces)
        assert [(c.name, json.loads(c.arguments)) for c in parser.calls] == [("get_weather", {"city": "Paris"})]
        assert parser.answer.strip() == ""


@pytest.mark.parametrize("name", ["Qwen-Qwen3-0.6B", "openai-gpt-oss-120b"])
def test_rendered_reasoning_reads_back(name: str) -> None:
    output = model_output(name, ChatMessage("assistant", "It is sunny.", reasoning="The user wants weather."))
    for pieces in (1, 2, len(output)):
        parser = parse(name, output, pieces)
        assert (parser.reasoning_text, parser.answer) == ("The user wants weather.", "It is sunny.")

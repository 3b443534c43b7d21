"""The transformers runner end to end on the Qwen3, Llama 3.1, gpt-oss and DeepSeek-R1 distill fixtures: each family's real
tokenizer and template (tests/families/hf_folder.py) under a tiny random-weight Llama, each turn through
the real scheduler.

Qwen3's markers are added tokens that transformers does not call special (`<tool_call>`, `<think>`),
where a forced call once ended right after `<tool_call>`; Llama 3.1's call is bare JSON with no marker;
gpt-oss thinks and calls in harmony's channels. What the random model writes is forced: a named tool
with bounded numbers (the engine's call grammar), or a thought and a call spelled out by the request's
own Lark grammar, so the split into thought and call is checked against known tokens.

The R1 distill's markers are not ASCII (`<｜User｜>`), which transformers' GGUF conversion (5.x) garbles;
its tokenizer here is put back as the runner puts it back (engine/runners/hf/gguf_tokens.py), and its
prompt opens the thought where thinking is asked for. The other families' conversions were checked by
hand (Mistral Nemo, Gemma 4: the same tokens and markers as llama.cpp) but their formats add nothing the
runner does differently, and each family costs a load (8-30 s here) and a conversion once per machine
(30 s to 5 min).
"""

from __future__ import annotations

import json
from typing import Any, Iterator

import jsonschema
import pytest

from engine.parsing.prompt import prepare_turn
from engine.protocol import ChatMessage, Constraint, ModelConfig, SamplingParams, Submit, ToolSpec, TurnFinished
from engine.scheduler import Scheduler
from tests.families.hf_folder import HF_FAMILIES

pytestmark = pytest.mark.slow
SMALL = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 99},
                                          "b": {"type": "integer", "minimum": 0, "maximum": 99}},
         "required": ["a", "b"]}
ADD = ToolSpec("add_small", "Add two whole numbers from 0 to 99.", json.dumps(SMALL))
BUDGET = 8  # a random model may think forever: the budget ends the thought
ASK = (ChatMessage("user", "Use the add tool to add 2 and 3."),)
THOUGHT = "adding two numbers"
# The call's opening marker as one special token (Llama 3.1's bare JSON call has none)
MARKER = {"qwen3": "<tool_call>", "llama3_1": None, "gpt_oss": "<|channel|>", "r1_distill": None}
assert set(MARKER) == set(HF_FAMILIES)
# A thought and a call as the family writes them (Llama 3.1 does not think): the request's grammar spells it out
WRITTEN = {
    "qwen3": f"<think>\n{THOUGHT}\n</think>\n\n<tool_call>\n"
             '{"name": "add_small", "arguments": {"a": 2, "b": 3}}\n</tool_call>',
    "llama3_1": '{"name": "add_small", "parameters": {"a": 2, "b": 3}}',
    "gpt_oss": f"<|channel|>analysis<|message|>{THOUGHT}<|end|><|start|>assistant<|channel|>commentary "
               'to=functions.add_small <|constrain|>json<|message|>{"a": 2, "b": 3}',
    # the call alone (the thought is the model's own, below); DeepSeek's call markers are text in its Qwen vocabulary
    "r1_distill": "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>add_small\n"
                  '```json\n{"a": 2, "b": 3}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
}
# The R1 distill's prompt opens the thought where thinking is asked for (else it closes it): a request's
# grammar starts where the answer does, so the model thinks first, until the budget ends the thought
OPENS_THOUGHT = {"r1_distill": (("enable_thinking", "true"),)}


@pytest.fixture(scope="module", params=HF_FAMILIES)
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def runner(family: str) -> Iterator[Any]:  # -> HfRunner
    pytest.importorskip("transformers")
    from engine.runners.hf.runner import HfRunner
    from tests.families.hf_folder import family_hf_folder

    loaded = HfRunner.load(ModelConfig(path=str(family_hf_folder(family)), backend="hf", slots=1,
                                       context_length=2048), lambda fraction, message: None, lambda: False)
    yield loaded
    loaded.close()


def run_turn(runner: Any, submit: Submit) -> tuple[TurnFinished, list[int]]:
    """(how the turn ended, the tokens the model wrote)."""
    text, setup = prepare_turn(runner.render_chat, runner.output_format, submit)
    scheduler = Scheduler(runner)
    events = scheduler.submit(submit.chat_id, runner.tokenize(text), submit.sampling, setup)
    sequence = scheduler.waiting[-1]
    while scheduler.has_work():
        events += scheduler.step()
    done = next(event for event in events if isinstance(event, TurnFinished))
    return done, list(sequence.output)


def test_the_prompt_is_the_tokens_llamacpp_makes_of_it_and_the_markers_are_its_special_tokens(
        runner: Any, family: str) -> None:
    from tests.families.vocab_view import family_vocabulary

    llamacpp = family_vocabulary(family)
    text, setup = prepare_turn(runner.render_chat, runner.output_format, Submit("a", ASK, tools=(ADD,)))
    assert "add_small" in text, "the template wrote the tools"
    assert runner.tokenize(text) == llamacpp.tokens(text)
    assert dict(runner.output_format.special_tokens) == dict(llamacpp.output.special_tokens)
    assert setup.tools == llamacpp.output.tools and runner.output_format.reasoning == llamacpp.output.reasoning


def test_a_named_call_opens_with_the_marker_token_and_fits_its_schema(runner: Any, family: str) -> None:
    sampling = SamplingParams(temperature=0, max_new_tokens=160, reasoning_budget=BUDGET)
    done, output = run_turn(runner, Submit("a", ASK, sampling, tools=(ADD,), tool_choice="add_small",
                                           parallel_tool_calls=False))
    assert done.reason == "tool_calls" and done.text == "", done
    [call] = done.tool_calls
    assert call.name == "add_small"
    jsonschema.validate(json.loads(call.arguments), SMALL)
    ids, marker = dict(runner.output_format.special_tokens), MARKER[family]
    if marker is not None:
        assert marker in ids and ids[marker] in output, "the marker is one special token"
    if "<think>" in ids:  # whether the random model thought first is its own choice: the thought is what it
        # wrote between the markers, within the budget
        opened, closed = ids["<think>"], ids["</think>"]
        thought = output[output.index(opened) + 1 : output.index(closed)] if opened in output else []
        assert len(thought) <= BUDGET and done.reasoning == runner.tokenizer.decode(thought).strip()


def test_a_thought_then_a_call_are_split_as_the_model_wrote_them(runner: Any, family: str) -> None:
    """The request's own grammar spells out the output, markers by their ids: every token is known."""
    from engine.parsing.call_grammar import literal

    specials = dict(runner.output_format.special_tokens)
    grammar = f"start: {literal(WRITTEN[family], specials)}\n"
    options = OPENS_THOUGHT.get(family, ())
    sampling = SamplingParams(temperature=0, max_new_tokens=160, constraint=Constraint("lark", grammar),
                              reasoning_budget=BUDGET if options else None)
    done, output = run_turn(runner, Submit("a", ASK, sampling, tools=(ADD,), template_options=options))
    assert done.reason == "tool_calls" and done.text == "", done
    if options:  # the thought is what the model wrote before the marker that closed it (the budget's close
        closed = output.index(specials["</think>"])  # is "\n</think>\n\n": one more token before the marker)
        assert closed <= BUDGET + 1 and done.reasoning == runner.tokenizer.decode(output[:closed]).strip()
        output = output[closed + 1 :]
    else:
        assert done.reasoning == ("" if family == "llama3_1" else THOUGHT)
    assert [(call.name, json.loads(call.arguments)) for call in done.tool_calls] == [("add_small", {"a": 2, "b": 3})]
    assert [token for token in output if token in specials.values()] == markers_in(WRITTEN[family], specials)


def markers_in(text: str, specials: dict[str, int]) -> list[int]:
    """The special tokens' ids in `text`, in order."""
    found, at = [], 0
    while at < len(text):
        marker = max((m for m in specials if text.startswith(m, at)), key=len, default="")
        found += [specials[marker]] if marker else []
        at += len(marker) or 1
    return found

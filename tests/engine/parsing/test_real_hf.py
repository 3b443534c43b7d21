"""The transformers runner shows the marker tokens the parser reads and hides the other special tokens.

A tiny Llama built in code whose tokenizer has <think> and </think> as special tokens and whose
template opens the thinking in its generation prompt.
"""

from __future__ import annotations

import pytest

from engine.parsing.prompt import prepare_turn
from engine.protocol import ChatMessage, Constraint, ModelConfig, ReasoningText, SamplingParams, Submit, TurnFinished
from engine.scheduler import Scheduler

pytestmark = pytest.mark.slow

TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n<think>\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory):  # -> HfRunner
    pytest.importorskip("transformers")
    from engine.runners.hf.runner import HfRunner
    from tests.engine.runners.hf.tiny_hf import build_tiny_llama

    folder = build_tiny_llama(tmp_path_factory.mktemp("thinking") / "tiny", extra_special=("<think>", "</think>"),
                              chat_template=TEMPLATE)
    loaded = HfRunner.load(ModelConfig(path=str(folder), backend="hf", slots=1, context_length=256),
                           lambda f, m: None, lambda: False)
    yield loaded
    loaded.close()


def test_marker_tokens_render_and_other_special_tokens_do_not(runner) -> None:  # type: ignore[no-untyped-def]
    assert runner.output_format.reasoning is not None and runner.info.capabilities == ("reasoning", "thinking_switch")
    assert set(runner.output_format.marker_texts) == {"<think>", "</think>"}
    ids = runner.tokenizer.encode("<|im_start|>x<think>cats</think>dogs<|im_end|>", add_special_tokens=False)
    assert runner.tokenizer.convert_tokens_to_ids("<think>") in ids, "the marker is one special token"
    detokenizer = runner.detokenizer()
    text = "".join(detokenizer.add(token) for token in ids) + detokenizer.flush()
    assert text == "x<think>cats</think>dogs"


def test_budget_closes_the_thinking(runner) -> None:  # type: ignore[no-untyped-def]
    """A random model: letters and spaces only (the constraint), so it cannot close the thinking itself."""
    params = SamplingParams(temperature=0, max_new_tokens=24, reasoning_budget=8,
                            constraint=Constraint("regex", "[a-z ]{100,200}"))
    text, setup = prepare_turn(runner.render_chat, runner.output_format, Submit("a", (ChatMessage("user", "Hi"),)))
    assert setup.in_reasoning
    scheduler = Scheduler(runner)
    events = scheduler.submit("a", runner.tokenize(text), params, setup)
    while scheduler.has_work():
        events += scheduler.step()
    done = next(e for e in events if isinstance(e, TurnFinished))
    assert done.stats.reasoning_tokens == 8
    assert "".join(e.text for e in events if isinstance(e, ReasoningText)) == done.reasoning
    assert done.text.strip(), "after the engine closed the thinking the model's text is the answer"
    close = runner.tokenizer.convert_tokens_to_ids("</think>")
    assert close in scheduler.slots[0].cached

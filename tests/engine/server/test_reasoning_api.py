"""A reasoning model's thinking through the API: reasoning_content (OpenAI), thinking blocks (Anthropic), reasoning items.

The model is a copy of the default GGUF written here whose template opens
`<think>` in the generation prompt (as the DeepSeek-R1 distills do): whatever the
model writes first is thinking. A thinking budget makes the engine close it, so
an answer follows. Asserted: where the parts go and that streams join to the
whole answer (greedy, same cache state), never what the model thinks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from engine.clients import EngineHost
from engine.protocol import ModelConfig
from tests.engine.server.conftest import BATCH, CONTEXT, load
from tests.engine.templateless_gguf import CHAT_TEMPLATE_KEY, copy_into

pytestmark = pytest.mark.slow
MODEL = "SmolLM2-thinking"
THINKING_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n'}}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n<think>\n' }}{% endif %}")
ASK = [{"role": "user", "content": "Is 17 a prime number?"}]
FIELDS = {"model": MODEL, "messages": ASK, "max_tokens": 40, "temperature": 0, "extra_body": {"reasoning_budget": 12}}


def write_thinking_copy(source: str, target: Path) -> Path:
    import gguf

    reader = gguf.GGUFReader(source)
    architecture = reader.get_field(gguf.Keys.General.ARCHITECTURE)
    assert architecture is not None
    writer = gguf.GGUFWriter(target, arch=str(architecture.contents()), endianess=reader.endianess)
    copy_into(writer, reader, values={CHAT_TEMPLATE_KEY: THINKING_TEMPLATE})
    return target


@pytest.fixture(scope="module")
def engine(default_model: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineHost]:
    """The module's own engine, on the thinking copy (the server fixture runs on it)."""
    path = write_thinking_copy(default_model, tmp_path_factory.mktemp("thinking") / f"{MODEL}.gguf")
    host = EngineHost(stats_interval_s=0.2)
    host.start()
    load(host, ModelConfig(path=str(path), context_length=CONTEXT, slots=2, threads=1, batch_tokens=BATCH))
    yield host
    host.shutdown()


def test_reasoning_content_apart_from_content_streamed_or_not(client) -> None:  # type: ignore[no-untyped-def]
    client.chat.completions.create(**{**FIELDS, "max_tokens": 1})  # warm-up: both below reuse the same cache
    whole = client.chat.completions.create(**FIELDS)
    message = whole.choices[0].message
    thinking = message.model_extra.get("reasoning_content")
    assert isinstance(thinking, str) and thinking.strip() and "</think>" not in thinking  # the marker is no text
    assert 0 < whole.usage.completion_tokens_details.reasoning_tokens <= 12  # the budget: the engine closes it
    chunks = list(client.chat.completions.create(**FIELDS, stream=True))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    assert "".join((d.model_extra or {}).get("reasoning_content") or "" for d in deltas) == thinking
    assert "".join(d.content or "" for d in deltas) == (message.content or "")


def test_thinking_blocks_on_messages_and_reasoning_items_on_responses(client, claude) -> None:  # type: ignore[no-untyped-def]
    fields = {"model": MODEL, "max_tokens": 40, "messages": ASK,
              "thinking": {"type": "enabled", "budget_tokens": 12}, "extra_body": {"temperature": 0}}
    message = claude.messages.create(**fields)
    assert message.content[0].type == "thinking" and message.content[0].thinking.strip()
    with claude.messages.stream(**fields) as stream:
        kinds = [(e.type, getattr(getattr(e, "delta", None), "type", None)) for e in stream]
        streamed = stream.get_final_message()
    assert ("content_block_delta", "thinking_delta") in kinds
    assert streamed.content[0].thinking == message.content[0].thinking
    response = client.responses.create(model=MODEL, input=ASK[0]["content"], max_output_tokens=20, temperature=0)
    assert response.output[0].type == "reasoning"

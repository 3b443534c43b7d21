"""The API through the real openai client on the real default model: answers, streams, usage, stops, seeds, the cache.

Greedy comparisons compare like with like: each pair runs over the same cache
state (a warm-up turn first, so both reuse the same prompt start and feed the
same last token), one request at a time.
"""

from __future__ import annotations

from engine.protocol import Submit, TurnQueued
from tests.engine.server.conftest import Tap, finished_of

QUESTION = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Write three short sentences about the sea."}]


def greedy(client, messages, **fields):  # type: ignore[no-untyped-def]
    return client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", messages=messages, temperature=0,
                                          **fields)


def streamed_text(client, messages, **fields) -> tuple[str, list]:  # type: ignore[no-untyped-def]
    chunks = list(greedy(client, messages, stream=True, **fields))
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices), chunks


def test_a_non_streaming_answer_with_its_usage(client, tap: Tap) -> None:
    answer = greedy(client, QUESTION, max_tokens=24, extra_body={"ignore_eos": True})  # 24 whatever it says
    choice = answer.choices[0]
    assert answer.object == "chat.completion" and answer.id.startswith("chatcmpl-")
    assert answer.model == "SmolLM2-135M-Instruct.Q4_1"
    assert choice.message.role == "assistant" and choice.message.content
    usage = answer.usage
    assert choice.finish_reason == "length"
    assert usage.completion_tokens == 24 and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    queued = [e for e in tap.events(TurnQueued) if e.prompt_tokens == usage.prompt_tokens]  # type: ignore[attr-defined]
    assert queued and usage.prompt_tokens > 20  # the chat template's markers and the system prompt count
    assert 0 <= usage.prompt_tokens_details.cached_tokens < usage.prompt_tokens


def test_streamed_deltas_join_to_the_non_streaming_answer(client) -> None:
    messages = [{"role": "user", "content": "Name the planets of the solar system."}]
    greedy(client, messages, max_tokens=1)  # warm-up: both runs below reuse the same cached start
    whole = greedy(client, messages, max_tokens=40)
    text, chunks = streamed_text(client, messages, max_tokens=40, stream_options={"include_usage": True})
    assert text == whole.choices[0].message.content and len(text) > 20
    assert chunks[0].choices[0].delta.role == "assistant"
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.content) >= 10  # it streamed, piece by piece
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == \
           [whole.choices[0].finish_reason]
    usage = chunks[-1].usage  # the last chunk: usage, no choices
    assert chunks[-1].choices == [] and usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens) == (whole.usage.prompt_tokens, whole.usage.completion_tokens)
    assert usage.prompt_tokens_details.cached_tokens == whole.usage.prompt_tokens - 1  # all but the last prompt token
    assert all(c.usage is None for c in chunks[:-1])


def test_no_usage_chunk_unless_asked(client) -> None:
    _, chunks = streamed_text(client, QUESTION, max_tokens=4)
    assert all(c.usage is None for c in chunks) and chunks[-1].choices[0].finish_reason == "length"


def test_max_tokens_and_max_completion_tokens_end_with_length(client) -> None:
    for fields in ({"max_tokens": 5}, {"max_completion_tokens": 7}, {"max_tokens": 50, "max_completion_tokens": 3}):
        answer = greedy(client, QUESTION, **fields)
        expected = fields.get("max_completion_tokens", fields.get("max_tokens"))  # the newer field wins
        assert answer.usage.completion_tokens == expected
        assert answer.choices[0].finish_reason == "length"


def test_a_stop_string_ends_the_answer_before_it(client) -> None:
    messages = [{"role": "user", "content": "Tell me about the moon."}]
    greedy(client, messages, max_tokens=1)
    reference = greedy(client, messages, max_tokens=40).choices[0].message.content
    words = [word for word in reference.split() if len(word) >= 4]
    assert len(words) >= 4, reference
    stop = words[len(words) // 2]  # from the middle of the answer: something comes before it
    cut = greedy(client, messages, max_tokens=40, stop=[stop, "never-written-stop"])
    assert cut.choices[0].finish_reason == "stop"
    assert cut.choices[0].message.content == reference[: reference.index(stop)] != ""
    assert stop not in cut.choices[0].message.content


def test_the_same_seed_samples_the_same_answer(client) -> None:
    messages = [{"role": "user", "content": "Invent a name for a cat."}]

    def sample(seed: int) -> str:
        return client.chat.completions.create(model="SmolLM2-135M-Instruct.Q4_1", messages=messages, temperature=1.0,
                                              top_p=1.0, seed=seed, max_tokens=24,
                                              extra_body={"top_k": 0, "min_p": 0.0}).choices[0].message.content

    sample(7)  # warm-up: the two runs compared below start from the same cache
    first, again = sample(42), sample(42)
    assert first == again and len(first) > 0
    others = {sample(seed) for seed in (1, 2, 3)}
    assert others != {first}  # a seed does choose: not every seed gives this one answer


def test_the_second_turn_finds_the_first_in_the_cache(client) -> None:
    first = greedy(client, [{"role": "system", "content": "You answer briefly."},
                            {"role": "user", "content": "What colour is a ripe banana?"}], max_tokens=16)
    follow_up = [{"role": "system", "content": "You answer briefly."},
                 {"role": "user", "content": "What colour is a ripe banana?"},
                 {"role": "assistant", "content": first.choices[0].message.content},
                 {"role": "user", "content": "And an unripe one?"}]
    second = greedy(client, follow_up, max_tokens=16)
    assert second.usage.prompt_tokens > first.usage.prompt_tokens
    assert second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens


def engine_answers(tap: Tap, prompt: str, after: int) -> list[str]:
    """The engine's own finished text of each plain-prompt request with `prompt` since record `after`, in order."""
    with tap.condition:
        chats = [m.chat_id for k, m, _, _ in tap.records[after:]  # type: ignore[attr-defined]
                 if k == "command" and isinstance(m, Submit) and m.prompt == prompt]
    return [finished_of(tap, chat).text for chat in chats]


def test_a_plain_completion_feeds_the_prompt_without_the_chat_template(client, tap: Tap) -> None:
    prompt = "The capital of France is"
    with tap.condition:
        start = len(tap.records)
    answer = client.completions.create(model="SmolLM2-135M-Instruct.Q4_1", prompt=prompt, temperature=0,
                                       max_tokens=6, extra_body={"ignore_eos": True})
    assert answer.object == "text_completion" and answer.id.startswith("cmpl-")
    assert (answer.usage.completion_tokens, answer.choices[0].finish_reason) == (6, "length")
    prompt_tokens = answer.usage.prompt_tokens
    assert prompt_tokens <= 7  # five words: no template's markers around them
    assert any(e.prompt_tokens == prompt_tokens for e in tap.events(TurnQueued))  # type: ignore[attr-defined]
    streamed = client.completions.create(model="SmolLM2-135M-Instruct.Q4_1", prompt=prompt, temperature=0,
                                         max_tokens=6, stream=True, extra_body={"ignore_eos": True})
    text = "".join(chunk.choices[0].text for chunk in streamed)
    # each answer is the engine's own text for that request, whatever the model made of the prompt
    assert engine_answers(tap, prompt, start) == [answer.choices[0].text, text]


def test_penalties_change_what_is_picked(client) -> None:
    """top_k 1 after the penalties: a deterministic pick of the penalized logits, on llama.cpp's own sampler."""
    def continuation(**penalties: float) -> str:
        return client.completions.create(model="SmolLM2-135M-Instruct.Q4_1", prompt=" ".join(["hello"] * 10),
                                         temperature=0.5,
                                         max_tokens=16, extra_body={"top_k": 1, "repeat_penalty": 1.0},
                                         **penalties).choices[0].text

    plain, again = continuation(), continuation()
    penalized = continuation(frequency_penalty=2.0, presence_penalty=2.0)
    assert plain == again and plain.startswith(" hello"), plain  # ten hellos: the obvious next word
    # ten uses in the window: 2 x 10 + 2 off its logit, far past any other word's
    assert "hello" not in penalized.lower() and penalized.strip(), penalized


def test_penalties_apply_at_temperature_0_too(client) -> None:
    """As llama-server and OpenAI do: greedy picks the best of the penalized logits."""
    def continuation(**penalties: float) -> str:
        return client.completions.create(model="SmolLM2-135M-Instruct.Q4_1", prompt=" ".join(["hello"] * 10),
                                         temperature=0, max_tokens=16, extra_body={"repeat_penalty": 1.0},
                                         **penalties).choices[0].text

    plain, penalized = continuation(), continuation(frequency_penalty=2.0, presence_penalty=2.0)
    assert plain.startswith(" hello"), plain
    assert "hello" not in penalized.lower() and penalized.strip(), penalized


def test_a_full_context_ends_with_length_and_a_note(client) -> None:
    words = " ".join(["word"] * 1000)  # about 1,000 tokens of a 1,024-token context
    answer = client.completions.create(model="SmolLM2-135M-Instruct.Q4_1", prompt=words, max_tokens=500,
                                       temperature=0, extra_body={"ignore_eos": True})
    choice = answer.choices[0]
    assert choice.finish_reason == "length"
    assert "context is full" in choice.model_extra["note"]
    assert answer.usage.prompt_tokens + answer.usage.completion_tokens == 1024

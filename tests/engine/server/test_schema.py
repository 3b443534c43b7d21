"""What a request's fields become in the engine's sampling parameters."""

from __future__ import annotations

from engine.server.schema import CompletionRequest, parse, sampling


def _sampling(**fields: object):
    return sampling(parse(CompletionRequest, {"model": "m", "prompt": "Hi", **fields}), context_length=1024)


def test_no_repeat_penalty_unless_the_request_names_one() -> None:
    """As in OpenAI's API and llama-server: penalties are the client's choice, the window's 1.1 is not."""
    assert _sampling().repeat_penalty == 1.0
    assert _sampling(repeat_penalty=1.3).repeat_penalty == 1.3
    plain = _sampling(temperature=0, frequency_penalty=0.5)
    assert (plain.temperature, plain.frequency_penalty, plain.max_new_tokens) == (0, 0.5, 1024)

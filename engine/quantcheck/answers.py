"""The questions answered greedily, and two models' answers compared.

Answers go through the same runner code as a chat (system prompt, template,
tokenizer, greedy sampler), one question at a time in slot 0, so tokens/s is what one
chat would see. Two answers are "the same" when their first 64 tokens are
identical (or both ended identically before that); the others get a
similarity score: difflib's ratio over their tokens, 1 for identical.
"""

from __future__ import annotations

import difflib
import json
import re
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from engine.protocol import ChatMessage, SamplingParams
from engine.quantcheck.errors import Cancelled
from engine.quantcheck.inputs import Question
from engine.runners.base import Runner, SlotWork

GREEDY = SamplingParams(temperature=0.0, repeat_penalty=1.0)
SYSTEM_PROMPT = "You are a helpful assistant."  # what a new chat sends (the chat.system_prompt setting's default)
SAME_PREFIX_TOKENS = 64
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Answer:
    tokens: tuple[int, ...]
    text: str
    decode_tokens: int  # tokens after the first (the first comes with the prompt)
    decode_seconds: float


def answer(runner: Runner, question: Question, max_new_tokens: int, cancelled: Callable[[], bool]) -> Answer:
    messages = [ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", question.prompt)]
    prompt = runner.tokenize(runner.render_chat(messages))
    runner.clear_slot(0)
    runner.begin_turn(0, GREEDY)
    detokenizer = runner.detokenizer()
    tokens: list[int] = []
    text, work = "", [SlotWork(0, prompt, 0, True)]
    started = 0.0
    for _ in range(max_new_tokens):
        if cancelled():
            raise Cancelled()
        token = runner.forward(work)[0]
        if not tokens:
            started = time.perf_counter()  # decode speed: the steps after the prompt's
        if runner.is_end_of_generation(token):
            break
        tokens.append(token)
        text += detokenizer.add(token)
        work = [SlotWork(0, [token], len(prompt) + len(tokens) - 1, True)]
        if len(prompt) + len(tokens) >= runner.context_length:
            break
    elapsed = time.perf_counter() - started if tokens else 0.0
    runner.clear_slot(0)
    return Answer(tuple(tokens), (text + detokenizer.flush()).strip(), max(len(tokens) - 1, 0), elapsed)


def same_start(a: Sequence[int], b: Sequence[int], length: int = SAME_PREFIX_TOKENS) -> bool:
    return tuple(a[:length]) == tuple(b[:length])


def similarity(a: Sequence[int], b: Sequence[int]) -> float:
    if not a and not b:
        return 1.0
    return difflib.SequenceMatcher(None, list(a), list(b), autojunk=False).ratio()


def parses_as_json(text: str) -> bool:
    """Whether the answer is JSON: the whole answer, or the one fenced block it holds.

    Strict on purpose: a program reading the answer gets exactly this text.
    """
    fenced = _FENCE.findall(text)
    body = fenced[0] if len(fenced) == 1 else text
    try:
        value = json.loads(body.strip())
    except json.JSONDecodeError:
        return False
    return isinstance(value, (dict, list))


def is_right(text: str, question: Question) -> bool | None:
    """None when the question has no expected answer."""
    if not question.expected:
        return None
    lowered = text.lower()
    return any(_mentions(lowered, expected.lower()) for expected in question.expected)


def _mentions(text: str, expected: str) -> bool:
    # "12" must not be found inside "112", nor "au" inside "because"
    return re.search(rf"(?<![\w.]){re.escape(expected)}(?![\w])", text) is not None

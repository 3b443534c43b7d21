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
    decode_tokens: int  # one-token steps after the prompt's (which brings the first token)
    decode_seconds: float


def answer(runner: Runner, question: Question, max_new_tokens: int, cancelled: Callable[[], bool]) -> Answer:
    messages = [ChatMessage("system", SYSTEM_PROMPT), ChatMessage("user", question.prompt)]
    prompt = runner.tokenize(runner.render_chat(messages))
    runner.clear_slot(0)
    runner.begin_turn(0, GREEDY)
    detokenizer = runner.detokenizer()
    tokens: list[int] = []
    text, work = "", [SlotWork(0, prompt, 0, True)]
    started, steps = 0.0, -1  # decode speed: the steps after the prompt's
    while len(tokens) < max_new_tokens and len(prompt) + len(tokens) < runner.context_length:
        if cancelled():
            raise Cancelled()
        (token,) = runner.forward(work)[0]  # no drafts: one new token
        steps += 1
        started = started or time.perf_counter()
        if runner.is_end_of_generation(token):
            break
        tokens.append(token)
        text += detokenizer.add(token)
        if _cut_at_marker(text, runner.end_markers) is not None:
            break  # a marker of several tokens: the chat would stop here too
        work = [SlotWork(0, [token], len(prompt) + len(tokens) - 1, True)]
    runner.clear_slot(0)
    text += detokenizer.flush()
    cut = _cut_at_marker(text, runner.end_markers)
    return Answer(tuple(tokens), text[:cut].strip(), max(steps, 0), time.perf_counter() - started if steps > 0 else 0.0)


def _cut_at_marker(text: str, markers: Sequence[str]) -> int | None:
    found = [text.find(marker) for marker in markers if marker and marker in text]
    return min(found) if found else None


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

"""The parts a parser hands back as a turn's text arrives (engine/parsing/stream.py)."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class AnswerText:
    text: str


@dataclass(frozen=True)
class ReasoningPart:
    text: str


@dataclass(frozen=True)
class CallStarted:
    """Call number `index` of the turn was opened; its whole name is known."""

    index: int
    call_id: str
    name: str


@dataclass(frozen=True)
class CallArguments:
    """The next fragment of call `index`'s arguments (the fragments join to its JSON text)."""

    index: int
    text: str


@dataclass(frozen=True)
class CallDone:
    index: int


Part = Union[AnswerText, ReasoningPart, CallStarted, CallArguments, CallDone]


def new_call_id(short: bool = False) -> str:
    """OpenAI-style ids; `short`: the 9 letters and digits Mistral's templates insist on."""
    if short:
        alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
        return "".join(secrets.choice(alphabet) for _ in range(9))
    return "call_" + secrets.token_hex(12)

"""What one sampled token does to its turn: the text it adds, and whether the turn ends or changes course.

A turn ends at a stop string, when its tool calls are complete, at its token limit, or where the
context is full; the thinking budget, once spent, writes the reasoning's closing marker into the
sequence so that the model answers now; a constraint that falls due (the answer's grammar after
the thinking) is asked for from the next token on.
"""

from __future__ import annotations

from typing import NamedTuple

from engine.protocol import Event, FinishReason
from engine.runners.base import Runner
from engine.sequence import Sequence


class Ending(NamedTuple):
    """How a turn ends; `release`: show what the stop-string check still held back."""

    reason: FinishReason
    message: str = ""
    release: bool = True


def read_token(sequence: Sequence, token: int, now: float, runner: Runner) -> tuple[list[Event], Ending | None]:
    """The events of `token`, just appended to the sequence's output, and the turn's end if it ends here."""
    params = sequence.params
    events = sequence.read(sequence.detokenizer.add(token), now)
    if sequence.stop_string_seen:
        return events, Ending("stop", release=False)
    if sequence.calls_are_done():
        return events, Ending("stop")  # reported as "tool_calls"
    budget = params.reasoning_budget
    if budget is not None and sequence.in_reasoning and sequence.reasoning_tokens >= budget:
        close_reasoning(sequence, now, runner)
    constraint = sequence.due_constraint()
    if constraint is not None:
        sequence.constrain_next(constraint)
    if len(sequence.output) >= params.max_new_tokens:
        return events, Ending("length")
    if sequence.length >= runner.context_length:
        message = (
            f"The context is full ({runner.context_length} tokens): the answer was cut here. "
            "Start a new chat or raise the context length in Settings."
        )
        return events, Ending("context_full", message)
    return events, None


def close_reasoning(sequence: Sequence, now: float, runner: Runner) -> None:
    """The thinking budget is spent: write the closing marker's tokens into the sequence (fed next
    step, never shown) so that the model answers now."""
    # harmony: the answer's grammar, where there is one, writes the next header itself (a call or final)
    marker = sequence.parser.close_reasoning(header_follows=sequence.answer_constraint is not None)
    sequence.reasoning_ended_at = now
    # a grammar that held the thinking never sees the close: the answer's own starts after it
    sequence.answer_due = sequence.answer_constraint is not None
    tokens = runner.tokenize(marker)
    start = runner.tokenize("")  # the BOS a tokenizer puts before any text
    if start and tokens[: len(start)] == start:
        tokens = tokens[len(start) :]
    sequence.output.extend(tokens)

"""A submitted turn as a Sequence: its stop texts, its constraints checked, its prompt against the context.

A turn that cannot run is still made into a Sequence, so that it ends with a TurnFinished like any
other and the client learns why where it looks.
"""

from __future__ import annotations

from dataclasses import replace

from engine.constraints import ConstraintError, check
from engine.parsing.answer_grammar import turn_constraints
from engine.parsing.prompt import TurnSetup, plain_turn
from engine.protocol import SamplingParams
from engine.runners.base import Runner
from engine.sequence import Sequence


def new_turn(runner: Runner, chat_id: str, prompt: list[int], params: SamplingParams,
             setup: TurnSetup | None) -> tuple[Sequence, str]:
    """The turn's Sequence and why it cannot run ("" : it can); `setup` None: the model's plain format."""
    if runner.end_markers and not params.ignore_eos:
        params = replace(params, stop=params.stop + runner.end_markers)
    setup = setup or plain_turn(runner.output_format)
    asked = params.constraint
    try:
        if asked is not None:
            check(asked)  # the client's own constraint first: its error names what the client wrote
        # room to think, then the answer under the client's schema and/or the call grammar
        first, after = turn_constraints(setup, asked)
        if first is not None:
            check(first)
    except ConstraintError as error:
        return Sequence(chat_id, prompt, params, runner.detokenizer(), setup=setup), str(error)
    sequence = Sequence(chat_id, prompt, replace(params, constraint=first), runner.detokenizer(), setup=setup)
    sequence.answer_constraint, sequence.answer_due = after, first is None and after is not None
    limit = runner.context_length
    if len(prompt) >= limit:
        return sequence, (
            f"This conversation is {len(prompt)} tokens long, more than the model's context of "
            f"{limit} tokens. Start a new chat, shorten the message, or raise the context length in Settings."
        )
    return sequence, ""

"""A constrained slot's rows in a step's masks, and its matcher walked over a draft to answer for one row.

A slot that feeds a draft samples at 1 + len(draft) rows: after its last token, then after each draft
token. The matcher is at the first row's place; a later row's question (may this token come here?) is
asked with the matcher advanced over the draft tokens before it, and rolled back after.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from llguidance import LLMatcher


@dataclass
class SlotRows:
    first: int  # the slot's first row in the step's masks
    count: int
    draft: list[int]
    filled: bool  # every row filled at once (else each row when it is asked for)
    forced: int = 0  # the draft's first tokens that the constraint forces (forced.py)


@contextmanager
def past_draft(matcher: LLMatcher, rows: SlotRows, offset: int) -> Iterator[LLMatcher | None]:
    """`matcher` advanced over the row's first `offset` draft tokens and rolled back after; None where the
    constraint forbids one of them."""
    taken = matcher.try_consume_tokens(rows.draft[:offset]) if offset else 0
    try:
        yield matcher if taken == offset else None
    finally:
        if taken:
            matcher.rollback(taken)


def ask(matcher: LLMatcher, rows: SlotRows, offset: int, token: int) -> bool | None:
    """The matcher's answer whether `token` may follow the row's draft tokens, the same as the mask's
    (tests/engine/constraints/test_masks.py); None where the constraint forces the next bytes (there
    llguidance's mask admits only their canonical tokens, `"city": ` as one token, not `"c` `ity`,
    and the matcher any token that spells them) or could end (the matcher refuses an end token the
    mask allows)."""
    with past_draft(matcher, rows, offset) as walked:
        if walked is None:
            return True  # past a draft token the constraint forbids the row is all allowed (start_masks)
        if walked.compute_ff_bytes() or walked.is_accepting():
            return None
        return walked.validate_tokens([token]) == 1

"""The tokens a constraint leaves no choice about, fed as a draft that needs no guessing.

After a JSON key's opening quote the schema forces `name": "` and more; there llguidance's mask allows one
token, the bytes' canonical spelling (on all 205 forced positions of five family fixtures' answers, tested
in tests/engine/constraints/test_forced.py), so every sampler chain picks it, greedy or not. Instead of a
step per forced token, the scheduler feeds them as the chat's draft (engine/scheduling/plan.py): the
model reads them in one pass, each row's sample is the forced token, and the step's last row samples the
next free one. Speculative decoding's jump-forward for grammars (SGLang's compressed FSM, guidance's
fast-forward tokens), done with the mask itself: llguidance's compute_ff_tokens tokenizes the forced
bytes and took 16 us a token on Qwen's vocabulary but 1.5 ms on gpt-oss's, a forced row's mask 15-25 us.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llguidance import LLMatcher
from llguidance.numpy import fill_next_token_bitmask

from engine.constraints import bits


def forced_tokens(matcher: LLMatcher, mask: np.ndarray, limit: int,
                  is_end: Callable[[int], bool]) -> tuple[list[int], bool]:
    """Up to `limit` tokens the constraint forces from the matcher's place on, before any end of generation, and
    whether `mask` (1 x words, scratch) holds the mask of the row after them (the walk stopped at a row with a
    choice, where bytes are forced but not their last token: `"` and then the string, say). The matcher is
    left where it was."""
    tokens: list[int] = []
    try:
        while len(tokens) < limit and matcher.compute_ff_bytes():  # 1-5 us; a mask where no bytes are forced: 30-1,500
            fill_next_token_bitmask(matcher, mask, 0)
            token = bits.single_token(mask[0])
            if token is None or is_end(token) or matcher.try_consume_tokens([token]) != 1:
                return tokens, True
            tokens.append(token)
        return tokens, False
    finally:
        if tokens:
            matcher.rollback(len(tokens))


class ForcedRuns:
    """Each constrained slot's forced tokens walked for the next step, with the mask of the row after them."""

    def __init__(self, n_vocab: int) -> None:
        self._words = bits.words(n_vocab)
        self._runs: dict[int, tuple[list[int], np.ndarray | None]] = {}  # slot -> (tokens, mask after them)

    def walk(self, slot: int, matcher: LLMatcher, limit: int, is_end: Callable[[int], bool]) -> list[int]:
        mask = np.empty((1, self._words), dtype=np.int32)
        tokens, masked = forced_tokens(matcher, mask, limit, is_end)
        self._runs[slot] = (tokens, mask if masked else None)
        return tokens

    def forces(self, slot: int, draft: Sequence[int]) -> bool:
        """Whether `draft` is the walk's tokens or their start (the plan may cut them short, or guess instead)."""
        run = self._runs.get(slot)
        return run is not None and bool(draft) and run[0][: len(draft)] == list(draft)

    def after(self, slot: int, draft: Sequence[int]) -> np.ndarray | None:
        """The mask (1 x words) of the row after `draft` where the walk ended there on a row with a choice."""
        tokens, mask = self._runs.get(slot, ([], None))
        return mask if tokens and tokens == list(draft) else None

    def drop(self, slot: int) -> None:
        self._runs.pop(slot, None)

    def clear(self) -> None:
        self._runs = {}

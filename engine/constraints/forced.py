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

from typing import Callable

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

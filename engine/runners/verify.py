"""Checking a draft against the model's own samples: why the answer follows the model's distribution whatever
the guesses were.

A draft here is a fixed token per position (a lookup's guess, or a draft model's likeliest token): a
distribution q that puts all its mass on the guess x. Speculative sampling (Leviathan et al. 2023, Chen et
al. 2023) keeps x with probability min(1, p(x) / q(x)) = p(x), and on a rejection draws from the residual
max(0, p - q) normalized: p without x, renormalized. Drawing y from p and keeping the guess exactly when
y == x does both in one draw: the guess is kept with probability p(x), and a y that differs is p's draw
conditioned on y != x, which is the residual. So each emitted token is distributed as p, and greedy
decoding (p all on the argmax) emits the argmax. The draw at position i + 1 is made only where position
i kept its guess, with the model's logits after that guess, so its state (random stream, penalty history)
advances once per emitted token, as generating one token per step would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def verify_draft(draft: Sequence[int], sample_at: Callable[[int], int]) -> list[int]:
    """The tokens a step emits: the guesses that the model's samples agreed with, then its first sample that
    did not (or the one after the whole draft). `sample_at(i)`: the model's sample at the i-th row of the
    chat's step (0: after the fed token, i: after draft token i - 1), drawn only when asked, in order."""
    tokens: list[int] = []
    for offset, guess in enumerate([*draft, None]):
        token = sample_at(offset)
        tokens.append(token)
        if token != guess:
            break
    return tokens

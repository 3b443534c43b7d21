"""A token mask's row of bits (llguidance's: bit t of word t // 32 set where token t is allowed), read.

Three ways a sampler uses one: as bools (the transformers runner's masked_fill), as a float32 row of
0.0 / -inf to add to logits (numpy vectorizes the addition; a masked copy branches per token and took
340-790 us against 80-100 us on a 152k vocabulary where most tokens are allowed), and as the best
allowed token of a row of logits, read from the allowed words alone where they are few (after a
JSON key most rows allow one token: 20 us instead of the row's 100).
"""

from __future__ import annotations

import numpy as np

NEGATIVE_INFINITY_BITS = np.uint32(0xFF800000)  # float32 -inf
SPARSE_WORDS = 64  # up to this many words with an allowed token: the best is read from those alone
_SHIFTS = np.arange(32, dtype=np.int32)


def words(n_vocab: int) -> int:
    return (n_vocab + 31) // 32


def allowed_bools(mask: np.ndarray, n_vocab: int) -> np.ndarray:
    return np.unpackbits(mask.view(np.uint8), bitorder="little")[:n_vocab].astype(bool)


def allows(mask: np.ndarray, token: int) -> bool:
    return bool((int(mask[token >> 5]) >> (token & 31)) & 1)


def penalty_row(mask: np.ndarray, out: np.ndarray) -> None:
    """`mask` as float32 bits into `out` (uint32, one per token): allowed 0.0, forbidden -inf."""
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[: out.shape[0]]
    np.subtract(bits, 1, out=out, dtype=np.uint32, casting="unsafe")  # allowed 0, forbidden all ones
    np.bitwise_and(out, NEGATIVE_INFINITY_BITS, out=out)


def sparse_tokens(mask: np.ndarray) -> np.ndarray | None:
    """The allowed tokens, where they fill at most SPARSE_WORDS words; None: more."""
    used = np.flatnonzero(mask)
    if len(used) > SPARSE_WORDS:
        return None
    bits = ((mask[used][:, None] >> _SHIFTS) & 1).astype(bool)
    return (used[:, None] * 32 + _SHIFTS)[bits]


def only(mask: np.ndarray, token: int) -> None:
    """`mask` (in place) allows `token` alone."""
    mask[:] = 0
    mask.view(np.uint32)[token >> 5] = np.uint32(1 << (token & 31))


def single_token(mask: np.ndarray) -> int | None:
    """The one token the row allows; None where it allows none or several. (Counted, then found with argmax
    over the words as unsigned: 2 us on a 152k vocabulary's row, flatnonzero 12; a forced walk asks per token.)"""
    if np.count_nonzero(mask) != 1:
        return None
    index = int(mask.view(np.uint32).argmax())
    word = int(mask[index]) & 0xFFFFFFFF
    if word & (word - 1):
        return None
    return index * 32 + word.bit_length() - 1

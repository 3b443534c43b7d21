"""Log-probabilities of sampled tokens, from the model's own row of logits (before any constraint's mask).

Both runners hand a numpy float32 row here before they mask it, and the chosen token's raw logit
after they sample (the mask never touches an allowed token, so it is still the model's own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from engine.protocol import TokenLogprob

MAX_TOP = 20  # OpenAI's top_logprobs limit


@dataclass(frozen=True)
class RowStats:
    log_total: float  # log of the sum of exp(logits): a logit minus this is its log-probability
    top: tuple[tuple[int, float], ...]  # the likeliest tokens and their log-probabilities, best first


def row_stats(row: np.ndarray, top: int) -> RowStats:
    """What a row's log-softmax gives, without building it: its normaliser and its `top` best tokens."""
    peak = float(row.max())
    log_total = peak + float(np.log(np.exp(row - peak, dtype=np.float64).sum()))
    count = min(max(top, 0), MAX_TOP, row.shape[0])
    if not count:
        return RowStats(log_total, ())
    best = np.argpartition(-row, count - 1)[:count]
    best = best[np.argsort(-row[best], kind="stable")]
    return RowStats(log_total, tuple((int(token), float(row[token]) - log_total) for token in best))


def entry(stats: RowStats, token: int, logit: float, piece: Callable[[int], bytes]) -> TokenLogprob:
    """The chosen token's entry: its text and bytes, its log-probability, the top alternatives' texts."""
    data = piece(token)
    top = tuple((_text(piece(other)), logprob) for other, logprob in stats.top)
    return TokenLogprob(_text(data), min(logit - stats.log_total, 0.0), tuple(data), top)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")

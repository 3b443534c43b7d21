"""Token-level agreement between two models, with llama-perplexity's definitions.

`llama-perplexity --kl-divergence` (llama.cpp tools/perplexity/perplexity.cpp):
the text is tokenized once (BOS added as the model wants), cut into chunks of
n_ctx tokens, the first token of each chunk replaced by BOS when the model adds
one, and only the second half of each chunk is scored (positions n_ctx/2 ..
n_ctx-2, each predicting the next token), so every scored token has at least
half a context behind it. Per scored position:
- KLD = sum_i p_ref(i) * (log p_ref(i) - log p_cand(i)) over the vocabulary
  (llama.cpp skips tokens with log p_ref <= -16; here every token counts);
- "same top": the candidate's most likely token is the reference's;
- NLL = -log p(next token); PPL = exp(mean NLL); delta-PPL = PPL(cand) - PPL(ref);
- the 99th percentile of KLD interpolates linearly between sorted values at
  0.99 * (count - 1), as llama.cpp's `percentile` does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

ROWS_PER_BLOCK = 32  # float64 work arrays of 32 x vocab: ~12 MiB for a 49k vocabulary


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise log-probabilities in float64."""
    values = np.asarray(logits, dtype=np.float64)
    shifted = values - values.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def kl_divergence(reference_logprobs: np.ndarray, candidate_logprobs: np.ndarray) -> np.ndarray:
    """KL(P_ref || P_cand) of each row, over the whole vocabulary."""
    ref = np.asarray(reference_logprobs, dtype=np.float64)
    cand = np.asarray(candidate_logprobs, dtype=np.float64)
    probs = np.exp(ref)
    # Where p_ref is 0 the term is 0, whatever the candidate says (no 0 * -inf).
    terms = np.where(probs > 0, probs * (ref - cand), 0.0)
    return terms.sum(axis=-1)


def percentile(values: np.ndarray, fraction: float) -> float:
    """llama.cpp's percentile: linear between the sorted neighbours of fraction * (n - 1)."""
    ordered = np.sort(np.asarray(values, dtype=np.float64))
    if ordered.size == 0:
        return math.nan
    if fraction <= 0:
        return float(ordered[0])
    if fraction >= 1:
        return float(ordered[-1])
    position = fraction * (ordered.size - 1)
    low = int(position)
    high = min(low + 1, ordered.size - 1)
    weight = position - low
    return float((1 - weight) * ordered[low] + weight * ordered[high])


def scored_range(context_length: int) -> tuple[int, int]:
    """(first, last + 1) of the positions scored in a chunk: its second half, minus the last."""
    first = context_length // 2
    return first, context_length - 1


def chunk_tokens(tokens: list[int], context_length: int, bos: int | None, limit: int | None = None) -> list[list[int]]:
    """Whole chunks of `context_length` tokens; the first of each becomes BOS when the model adds one."""
    count = len(tokens) // context_length
    if limit is not None:
        count = min(count, limit)
    chunks = []
    for index in range(count):
        chunk = list(tokens[index * context_length : (index + 1) * context_length])
        if bos is not None:
            chunk[0] = bos
        chunks.append(chunk)
    return chunks


@dataclass
class ReferenceRows:
    """What the reference leaves behind for one chunk's scored positions."""

    logprobs: np.ndarray  # (rows, vocab) float16
    top: np.ndarray  # (rows,) int64: argmax of the reference's float32 logits
    nll: np.ndarray  # (rows,) float64
    rounding: np.ndarray  # (rows,) float64: what float16 storage adds to each row's KLD (see below)


def reference_rows(logits: np.ndarray, targets: np.ndarray) -> ReferenceRows:
    """The reference's log-probabilities (stored as float16), top tokens and NLL of one chunk."""
    stored, nll, rounding = [], [], []
    for start in range(0, len(logits), ROWS_PER_BLOCK):
        exact = log_softmax(logits[start : start + ROWS_PER_BLOCK])
        half = exact.astype(np.float16)
        stored.append(half)
        rounding.append(kl_divergence(half, exact))
        nll.append(-exact[np.arange(len(exact)), targets[start : start + ROWS_PER_BLOCK]])
    top = np.asarray(logits).argmax(axis=-1).astype(np.int64)
    return ReferenceRows(np.concatenate(stored), top, np.concatenate(nll), np.concatenate(rounding))


@dataclass
class Agreement:
    """Running totals over every scored position of one candidate."""

    kld: list[np.ndarray] = field(default_factory=list)
    same_top: int = 0
    nll_candidate: float = 0.0
    nll_reference: float = 0.0
    count: int = 0

    def add(self, reference: ReferenceRows, candidate_logits: np.ndarray, targets: np.ndarray) -> None:
        for start in range(0, len(candidate_logits), ROWS_PER_BLOCK):
            stop = start + ROWS_PER_BLOCK
            cand = log_softmax(candidate_logits[start:stop])
            rounding = reference.rounding[start:stop]
            self.kld.append(kl_divergence(reference.logprobs[start:stop], cand) - rounding)
            self.same_top += int((np.asarray(candidate_logits[start:stop]).argmax(axis=-1) == reference.top[start:stop]).sum())
            rows = np.arange(len(cand))
            self.nll_candidate += float(-cand[rows, targets[start:stop]].sum())
        self.nll_reference += float(reference.nll.sum())
        self.count += len(candidate_logits)

    def summary(self) -> TokenAgreement:
        values = np.concatenate(self.kld) if self.kld else np.zeros(0)
        ppl_ref = math.exp(self.nll_reference / self.count) if self.count else math.nan
        ppl_cand = math.exp(self.nll_candidate / self.count) if self.count else math.nan
        return TokenAgreement(
            positions=self.count,
            mean_kld=float(values.mean()) if values.size else math.nan,
            p99_kld=percentile(values, 0.99),
            same_top_p=self.same_top / self.count if self.count else math.nan,
            ppl_reference=ppl_ref,
            ppl=ppl_cand,
            delta_ppl=ppl_cand - ppl_ref,
        )


@dataclass(frozen=True)
class TokenAgreement:
    positions: int
    mean_kld: float
    p99_kld: float
    same_top_p: float  # a fraction (llama.cpp prints it as a percentage)
    ppl_reference: float
    ppl: float
    delta_ppl: float


# Why `rounding`: the reference's log-probabilities l are kept as float16 l~ = l + d,
# |d| <= 2**-11 |l|. With p~ = exp(l~), sum p~ (l~ - c) = sum p~ (l~ - l) + sum p~ (l - c):
# the first sum depends on the reference alone and is stored per row (float64), so
# the KLD reported is sum p~ (l - c). It differs from the exact sum p (l - c) by
# sum (p~ - p)(l - c), at most about 2**-11 * sum p |l| |l - c| per position: zero for
# identical models, and 0.05% of |log p| x the log-ratio otherwise, far below any
# difference between two quantizations.
FLOAT16_RELATIVE_ERROR = 2.0**-11

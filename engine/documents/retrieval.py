"""Retrieval's pieces that need no database: the FTS5 query from a message, the hits, and
reciprocal rank fusion of several rankings (Cormack, Clarke and Büttcher, 2009)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

# Texts in, one vector per text out (rows of an (n, d) array); the embedding model is the caller's.
Embed = Callable[[Sequence[str]], np.ndarray]
RRF_K = 60  # the constant of the paper: damps the weight of the very first ranks
_MAX_TERMS = 32
_WORD = re.compile(r"\w+", re.UNICODE)
# Words that match almost every chunk and so only slow BM25 down without changing its order much.
_STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "did", "do", "does", "for", "from", "had", "has", "have", "how", "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with", "you", "your", "about", "into", "than", "also", "not", "no", "yes", "any", "all"])


@dataclass(frozen=True)
class Hit:
    chunk_id: int
    document: str  # the file's name
    doc_id: int
    page: int
    heading: str
    text: str
    rank: int  # 0 is the best


def fts_query(message: str) -> str:
    """An FTS5 MATCH expression: any of the message's words, each quoted so no word is an operator."""
    terms: list[str] = []
    for word in _WORD.findall(message.lower()):
        if len(word) > 1 and word not in _STOPWORDS and word not in terms:
            terms.append(word)
    return " OR ".join(f'"{term}"' for term in terms[:_MAX_TERMS])


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[int]:
    """Ids ordered by the sum of 1 / (k + rank) over the rankings they appear in (rank from 1)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda item: (-scores[item], item))

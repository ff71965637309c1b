"""Re-ranking of the episodic candidate pool: BM25 over the pool, fused with vector similarity.

The pool (a few hundred events that full-text, vector or entity search found) holds nearly every event
that could matter; what decides recall at a small budget is the order at its top. Term weights with
inverse document frequency, taken over the pool, keep words that every event shares (the speakers'
names, "I", "the") from outranking the words that single out the answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from core.terms import terms


def bm25_scores(query: str, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 of each document for the query, with document frequencies taken over `documents`.
    Only the query's terms are counted in a document (list.count, in C): no document needs its whole
    bag of words, only its length."""
    q = list(dict.fromkeys(terms(query)))
    if not q or not documents:
        return [0.0] * len(documents)
    lengths: list[int] = []
    counts: list[list[int]] = []
    for document in documents:
        words = terms(document)
        lengths.append(len(words))
        counts.append([words.count(term) for term in q])
    avg = (sum(lengths) / len(lengths)) or 1.0
    n = len(documents)
    idf = []
    for i in range(len(q)):
        df = sum(1 for c in counts if c[i])
        idf.append(math.log(1 + (n - df + 0.5) / (df + 0.5)))
    out = []
    for c, length in zip(counts, lengths, strict=True):
        score = 0.0
        for i, tf in enumerate(c):
            if tf:
                score += idf[i] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))
        out.append(score)
    return out

"""Re-ranking of the episodic candidate pool: BM25 over the pool, fused with vector similarity.

The pool (a few hundred events that full-text, vector or entity search found) holds nearly every event
that could matter; what decides recall at a small budget is the order at its top. Term weights with
inverse document frequency, taken over the pool, keep words that every event shares (the speakers'
names, "I", "the") from outranking the words that single out the answer.

A passage's index terms are stored when it is written (episodic.passages.passage_line) and the database
counts the query's terms in them (episodic.selectors.passage_search_rows): the pool's scores are then
array operations over those counts (bm25_from_counts), and no passage is tokenised per request.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.terms import terms


def query_terms(query: str) -> list[str]:
    """The query's index terms, each once, in order: the terms BM25 counts."""
    return list(dict.fromkeys(terms(query)))


def bm25_from_counts(counts: np.ndarray, lengths: np.ndarray, *, k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    """Okapi BM25 of each document from `counts` (documents x query terms: how often each term is among
    the document's index terms) and `lengths` (its number of index terms), with document frequencies
    taken over the documents."""
    n = counts.shape[0]
    if n == 0 or counts.shape[1] == 0:
        return np.zeros(n)
    tf = counts.astype(np.float64)
    avg = (int(lengths.sum()) / n) or 1.0
    df = (counts > 0).sum(axis=0)
    idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
    norm = k1 * (1 - b + b * lengths.astype(np.float64) / avg)
    parts = idf * tf * (k1 + 1) / (tf + norm[:, None])
    return np.where(counts > 0, parts, 0.0).sum(axis=1)


def term_counts(q: Sequence[str], document: str) -> tuple[list[int], int]:
    """How often each of the terms `q` is among the document's index terms, and their number."""
    words = terms(document)
    return [words.count(term) for term in q], len(words)


def bm25_scores(query: str, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 of each document for the query, with document frequencies taken over `documents`,
    the documents tokenised here (bm25_from_counts for counts read with them)."""
    q = query_terms(query)
    if not q or not documents:
        return [0.0] * len(documents)
    counted = [term_counts(q, document) for document in documents]
    counts = np.array([c for c, _ in counted], dtype=np.int64).reshape(len(documents), len(q))
    lengths = np.array([length for _, length in counted], dtype=np.int64)
    return [float(x) for x in bm25_from_counts(counts, lengths, k1=k1, b=b)]

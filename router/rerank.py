"""Re-ranking of the episodic candidate pool: BM25 over the pool, fused with vector similarity.

The pool (a few hundred events that full-text, vector or entity search found) holds nearly every event
that could matter; what decides recall at a small budget is the order at its top. Term weights with
inverse document frequency, taken over the pool, keep words that every event shares (the speakers'
names, "I", "the") from outranking the words that single out the answer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from core.lru import byte_lru_cache

_WORD = re.compile(r"[a-z0-9]+")
# Common English function words: they carry no evidence and are in almost every event.
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves""".split()
)


TERM_CACHE_BYTES = 8 * 1024 * 1024


@byte_lru_cache(TERM_CACHE_BYTES)
def _term(word: str) -> str:
    """A word's index term: "" for a stopword, else the word with a light stemmer applied (plurals and
    -ing/-ed forms meet their stem often enough to be worth it). Cached: vocabularies are small, but a
    "word" can be a 32,000-character run of letters, so the cache is bounded by bytes."""
    if word in STOPWORDS:
        return ""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    return [t for t in map(_term, _WORD.findall(text.lower())) if t]


def bm25_scores(query: str, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Okapi BM25 of each document for the query, with document frequencies taken over `documents`."""
    q = list(dict.fromkeys(terms(query)))
    if not q or not documents:
        return [0.0] * len(documents)
    docs = [Counter(terms(d)) for d in documents]
    lengths = [sum(d.values()) for d in docs]
    avg = (sum(lengths) / len(lengths)) or 1.0
    n = len(docs)
    idf = {}
    for term in q:
        df = sum(1 for d in docs if term in d)
        idf[term] = math.log(1 + (n - df + 0.5) / (df + 0.5))
    out = []
    for d, length in zip(docs, lengths, strict=True):
        score = 0.0
        for term in q:
            tf = d.get(term, 0)
            if tf:
                score += idf[term] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg))
        out.append(score)
    return out

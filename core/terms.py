"""Index terms of English text: lowercased words, stopwords dropped, a light stemmer applied. Shared by
the router's re-ranking (BM25 over the pool) and consolidation's test of what two statements are about."""

from __future__ import annotations

import re

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


_SUFFIXES = ("ing", "ed", "es", "s")


def _term(word: str) -> str:
    """A word's index term: "" for a stopword, else the word with a light stemmer applied (plurals and
    -ing/-ed forms meet their stem often enough to be worth it)."""
    if word in STOPWORDS:
        return ""
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


# The terms of words seen so far. A request stems a few thousand words, and a dict lookup done in C
# costs a fraction of a call to _term; the dict is bounded by what it may hold (words of at most
# TERM_CACHE_WORD_CHARS characters, at most TERM_CACHE_WORDS of them, about 10 MB), not by what callers
# send, and a word it may not hold is stemmed each time. Entries are never replaced, so no lock is needed.
TERM_CACHE_WORDS = 50_000
TERM_CACHE_WORD_CHARS = 32


class _Terms(dict[str, str]):
    def __missing__(self, word: str) -> str:
        term = _term(word)
        if len(word) <= TERM_CACHE_WORD_CHARS and len(self) < TERM_CACHE_WORDS:
            self[word] = term
        return term


_TERMS = _Terms()


def terms(text: str) -> list[str]:
    return [t for t in map(_TERMS.__getitem__, _WORD.findall(text.lower())) if t]

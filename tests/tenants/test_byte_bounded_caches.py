"""Process caches keyed by caller text stay under a byte bound whatever the callers send."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable

import pytest

from core import embedding, tokens
from core import terms as terms_module
from core.embedding import EmbeddingCache, HashingEmbedder
from core.lru import ByteLRU

HUGE = 32_000
MB = 1024 * 1024


def retained(flood: Callable[[], None]) -> int:
    """Bytes still allocated after `flood` returns: what the caches kept of it."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        flood()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_an_lru_of_a_flood_of_huge_keys_stays_under_its_byte_bound() -> None:
    cache: ByteLRU[str, int] = ByteLRU(max_bytes=1_000_000)
    for i in range(500):
        cache.put(f"{i:05d}" + "\U0001f600" * HUGE, i)  # astral: 4 bytes a character in a str
        assert cache.nbytes <= 1_000_000
    assert 0 < len(cache) < 10
    assert cache.get("00499" + "\U0001f600" * HUGE) == 499 and cache.get("00000" + "\U0001f600" * HUGE) is None


def test_an_entry_larger_than_the_bound_is_not_kept_and_a_replaced_entry_is_not_counted_twice() -> None:
    cache: ByteLRU[str, str] = ByteLRU(max_bytes=10_000)
    cache.put("big", "x" * 20_000)
    assert cache.get("big") is None and cache.nbytes == 0
    cache.put("k", "v" * 100)
    first = cache.nbytes
    cache.put("k", "w" * 100)
    assert cache.nbytes == first and len(cache) == 1


def test_the_query_embedding_cache_is_bounded_by_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "get_embedder", lambda: HashingEmbedder())
    cache = EmbeddingCache(max_bytes=2_000_000)
    for i in range(100):
        cache.embed([f"query {i} " + "\U0001f600" * HUGE])
        assert cache.nbytes <= 2_000_000
    assert len(cache) < 20
    # A vector stored from a batch does not keep the whole batch alive.
    cache.clear()
    cache.embed([f"t{i}" for i in range(50)])
    assert cache.nbytes < 50 * (embedding.EMBEDDING_DIM * 4 + 400)


def test_a_flood_of_32000_character_queries_keeps_the_embedding_cache_under_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embedding, "get_embedder", lambda: HashingEmbedder())
    monkeypatch.setattr(embedding, "embedding_cache", EmbeddingCache())

    def flood() -> None:
        for i in range(400):
            embedding.embed_one(f"{i} " + "\u4e16" * HUGE)

    assert retained(flood) <= embedding.EMBEDDING_CACHE_BYTES + 2 * MB


def test_a_flood_of_long_lines_keeps_the_token_count_cache_under_its_bound() -> None:
    tokens._count_short.cache_clear()

    def line(i: int) -> str:
        # As long as a line the cache takes, with an astral character (a str of 4 bytes a character),
        # the rest spaces: few tokens, so the flood is quick even under tracemalloc.
        return f"{i:04d} \U0001f600" + " " * (tokens._SHORT - 6)

    count = 3_000
    # Kept whole, the lines would hold more than the bound allows: a cache without one would fail here.
    assert sum(sys.getsizeof(line(i)) for i in range(count)) > tokens.TOKEN_CACHE_BYTES + 4 * MB

    def flood() -> None:
        for i in range(count):
            assert tokens.count_tokens(line(i)) > 0

    assert retained(flood) <= tokens.TOKEN_CACHE_BYTES + 2 * MB
    tokens._count_short.cache_clear()


def test_a_flood_of_huge_words_leaves_nothing_behind_in_the_reranker() -> None:
    word = "q" * HUGE

    def flood() -> None:
        for i in range(600):
            terms_module.terms(word + f"{i:04d}".translate(str.maketrans("0123456789", "abcdefghij")))

    # 600 distinct words of 32 KB: kept, any of them would show.
    assert retained(flood) < sys.getsizeof(word)


def test_the_rerank_term_cache_holds_short_words_only_and_at_most_its_count() -> None:
    terms_module._TERMS.clear()
    assert terms_module.terms("Running dogs ran") == ["runn", "dogs", "ran"]
    assert terms_module.terms("the runnings") == ["running"]  # a stopword is no term; -s is stripped first
    assert set(terms_module._TERMS) == {"running", "dogs", "ran", "the", "runnings"}
    terms_module.terms("x" * (terms_module.TERM_CACHE_WORD_CHARS + 1))
    assert len(terms_module._TERMS) == 5
    many = " ".join(f"w{i}" for i in range(terms_module.TERM_CACHE_WORDS + 10))
    assert len(terms_module.terms(many)) == terms_module.TERM_CACHE_WORDS + 10
    assert len(terms_module._TERMS) == terms_module.TERM_CACHE_WORDS
    terms_module._TERMS.clear()

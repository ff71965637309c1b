"""A test's embedder: which one embeds is a setting, and the process keeps the embedder (and, where
asked, vectors) it built, so both are cleared on the way in and out."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from core import embedding


@contextmanager
def using_embedder(settings: Any, path: str, *, fresh_vectors: bool = False) -> Iterator[None]:
    """Embed with the class at `path` (e.g. "core.embedding.OnnxMiniLMEmbedder") inside the block;
    `fresh_vectors` also empties the vector cache, so that no vector of another embedder is read back."""
    saved = settings.ENGRAM
    settings.ENGRAM = {**saved, "EMBEDDER": path}
    embedding.get_embedder.cache_clear()
    if fresh_vectors:
        embedding.embedding_cache.clear()
    try:
        yield
    finally:
        # The settings first: a query still embedding on a helper thread must not cache this embedder
        # for the tests that follow.
        settings.ENGRAM = saved
        embedding.get_embedder.cache_clear()
        if fresh_vectors:
            embedding.embedding_cache.clear()

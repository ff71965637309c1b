"""A least-recently-used cache bounded by the bytes it holds, not by its number of entries.

Process caches keyed by text (queries of up to 32,000 characters, lines of memory, words) must not
grow with what callers send: an entry count bounds nothing when one key can be a megabyte. Sizes are
what `sys.getsizeof` reports for key and value (a str of non-Latin text takes 4 bytes a character)
plus a fixed overhead for the entry; an entry bigger than the whole bound is not kept at all.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
R = TypeVar("R")

ENTRY_OVERHEAD = 100  # the ordered dict's node and hash slot, roughly


def deep_sizeof(value: Any) -> int:
    """Bytes of a str, bytes, number, numpy array, or a tuple of those."""
    if isinstance(value, tuple):
        return sys.getsizeof(value) + sum(deep_sizeof(v) for v in value)
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):
        return sys.getsizeof(value) + (0 if getattr(value, "base", None) is None else nbytes)
    return sys.getsizeof(value)


class ByteLRU(Generic[K, V]):
    """Thread-safe; `get` refreshes an entry, `put` evicts the least recently used until it fits."""

    def __init__(self, max_bytes: int, sizeof: Callable[[K, V], int] | None = None) -> None:
        self.max_bytes = max_bytes
        self._sizeof = sizeof or (lambda k, v: deep_sizeof(k) + deep_sizeof(v))
        self._data: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: K) -> V | None:
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[0]

    def put(self, key: K, value: V) -> None:
        size = self._sizeof(key, value) + ENTRY_OVERHEAD
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            if size > self.max_bytes:
                return
            self._data[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._data.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._bytes = 0


def byte_lru_cache(max_bytes: int) -> Callable[[Callable[[str], R]], Callable[[str], R]]:
    """functools.lru_cache for functions of one string, bounded by bytes; `.cache` is the ByteLRU."""

    def decorate(func: Callable[[str], R]) -> Callable[[str], R]:
        cache: ByteLRU[str, R] = ByteLRU(max_bytes)

        @functools.wraps(func)
        def wrapper(text: str) -> R:
            hit = cache.get(text)
            if hit is not None:
                return hit
            value = func(text)
            cache.put(text, value)
            return value

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        return wrapper

    return decorate

"""Failed authentications, limited per client address and per key prefix (in Redis)."""

from __future__ import annotations

import time

from django.conf import settings

from core.redis import get_redis


class AuthFailureThrottle:
    """Failed authentications, counted per client address and per key prefix in a fixed window in
    Redis. Over either limit, every failed attempt from that address or with that prefix is a 429
    instead of a 401 until the window ends; a key that verifies is never asked (api.auth)."""

    def __init__(self, *, address: str, prefix: str | None) -> None:
        self.keys: list[tuple[str, int]] = [(f"addr:{address}", settings.ENGRAM["AUTH_FAILURES_PER_ADDRESS"])]
        if prefix:
            self.keys.append((f"prefix:{prefix[:64]}", settings.ENGRAM["AUTH_FAILURES_PER_PREFIX"]))

    @staticmethod
    def _window(now: float) -> int:
        return int(now // settings.ENGRAM["AUTH_FAILURE_WINDOW_SECONDS"])

    def _key(self, name: str, window: int) -> str:
        return f"engram:authfail:{name}:{window}"

    def wait(self) -> float | None:
        """Seconds until attempts are allowed again, or None while under every limit."""
        now = time.time()
        window = self._window(now)
        counts = get_redis().mget([self._key(name, window) for name, _ in self.keys])
        for (_, limit), count in zip(self.keys, counts, strict=True):
            if limit > 0 and count is not None and int(count) >= limit:
                return (window + 1) * settings.ENGRAM["AUTH_FAILURE_WINDOW_SECONDS"] - now
        return None

    def record_failure(self) -> None:
        window = self._window(time.time())
        ttl = settings.ENGRAM["AUTH_FAILURE_WINDOW_SECONDS"] + 1
        pipe = get_redis().pipeline()
        for name, _ in self.keys:
            pipe.incr(self._key(name, window))
            pipe.expire(self._key(name, window), ttl, nx=True)
        pipe.execute()

"""Per-tenant rate limit: a fixed one-minute window counted atomically in Redis."""

from __future__ import annotations

import time
from typing import Any

from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from api.auth import TenantPrincipal
from core.redis import get_redis

WINDOW_SECONDS = 60


class TenantRateThrottle(BaseThrottle):
    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        user = request.user
        if not isinstance(user, TenantPrincipal):
            return True
        limit = user.tenant.config.rate_limit_per_minute
        if limit <= 0:
            return True
        now = time.time()
        window = int(now // WINDOW_SECONDS)
        key = f"engram:throttle:{user.tenant.id}:{window}"
        pipe = get_redis().pipeline()
        pipe.incr(key)
        pipe.expire(key, WINDOW_SECONDS + 1, nx=True)
        count, _ = pipe.execute()
        if int(count) > limit:
            self._wait = (window + 1) * WINDOW_SECONDS - now
            return False
        return True

    def wait(self) -> float | None:
        return self._wait

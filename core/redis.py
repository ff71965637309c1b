"""One Redis client per process for the parts that need Redis itself, not the cache API."""

from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=1)
def get_redis() -> "redis.Redis":
    return redis.Redis.from_url(
        settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30
    )

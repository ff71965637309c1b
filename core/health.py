"""Liveness and readiness probes: /healthz answers while the process runs, /readyz when its
dependencies (PostgreSQL, Redis as cache and as broker) answer too."""

from __future__ import annotations

import time

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

from core.redis import get_redis


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, dict[str, object]] = {}
    for name, probe in (("database", _database), ("redis", _redis), ("broker", _broker)):
        started = time.perf_counter()
        try:
            probe()
            checks[name] = {"ok": True}
        except Exception as exc:  # noqa: BLE001 - a probe reports every failure, whatever it is
            checks[name] = {"ok": False, "error": type(exc).__name__}
        checks[name]["ms"] = round((time.perf_counter() - started) * 1000, 1)
    ready = all(c["ok"] for c in checks.values())
    return JsonResponse({"status": "ready" if ready else "not ready", "checks": checks}, status=200 if ready else 503)


def _database() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def _redis() -> None:
    get_redis().ping()


def _broker() -> None:
    import redis

    if settings.CELERY_BROKER_URL.startswith("redis"):
        redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=2).ping()

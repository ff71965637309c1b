"""Operational logs: one JSON line per request and per task, each carrying its request id, tenant id
and task id; every other line logged meanwhile carries them too.

The request line is gunicorn's access log (config/gunicorn_conf.py), written from what the request
middleware left in the WSGI environ: the route pattern, never the path or the query string, which
hold subject ids. The task line is written when a task finishes (`task_postrun`). Neither holds
content or subject values; at INFO nothing else of ours does either (tests/production/test_logs.py).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import IO, Any

from django.http import HttpRequest, HttpResponse
from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

REQUEST_ID_HEADER = "X-Request-ID"
# A caller's id is kept when it is short and plain, so it can be followed across services.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
ENVIRON_PREFIX = "engram."

request_id_var: ContextVar[str | None] = ContextVar("engram_request_id", default=None)
tenant_id_var: ContextVar[str | None] = ContextVar("engram_tenant_id", default=None)
task_id_var: ContextVar[str | None] = ContextVar("engram_task_id", default=None)

task_logger = logging.getLogger("engram.task")


class ContextFilter(logging.Filter):
    """Puts the current request id, tenant id and task id on every record. The tenant is the one the
    code runs for: the task's, or the one tenant in scope (an API key's, a tenant_scope block's)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id_var.get()
        record.tenant_id = tenant_id_var.get() or _scoped_tenant()
        record.task_id = task_id_var.get()
        return True


def _scoped_tenant() -> str | None:
    from tenants.scope import active_tenant_ids

    ids = active_tenant_ids()
    return str(next(iter(ids))) if ids is not None and len(ids) == 1 else None


def log_format_choose(*, configured: str, stream: IO[str]) -> str:
    """The console formatter's name: `json` or `plain` as configured; `auto` (what the run command asks
    for) is plain when a person reads the stream at a terminal and JSON when it goes to a file or a
    collector."""
    if configured != "auto":
        return configured
    isatty = getattr(stream, "isatty", None)
    return "plain" if isatty is not None and isatty() else "json"


class JsonFormatter(_JsonFormatter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("timestamp", "time")
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        super().__init__("%(levelname)s %(name)s %(message)s %(request_id)s %(tenant_id)s %(task_id)s", **kwargs)


class PlainFormatter(logging.Formatter):
    """For people at a terminal (`make run`): the same fields, on one readable line."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ids = [
            f"{key}={value}"
            for key in ("request_id", "tenant_id", "task_id")
            if (value := getattr(record, key, None)) is not None
        ]
        return f"{line} [{' '.join(ids)}]" if ids else line


def _request_id(request: HttpRequest) -> str:
    offered = request.headers.get(REQUEST_ID_HEADER, "")
    return offered if _REQUEST_ID.fullmatch(offered) else uuid.uuid4().hex


class RequestContextMiddleware:
    """Names the request (X-Request-ID, echoed in the response), binds its ids to every log line, and
    leaves the route and the tenant in the WSGI environ for the access log."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rid = _request_id(request)
        request.META[ENVIRON_PREFIX + "request_id"] = rid
        rid_token = request_id_var.set(rid)
        tenant_token = tenant_id_var.set(None)
        try:
            response = self.get_response(request)
        finally:
            tenant = _tenant_id(request)
            match = getattr(request, "resolver_match", None)
            request.META[ENVIRON_PREFIX + "tenant_id"] = tenant
            # The /v1/ catch-all that answers problem+json 404s is no route of the API.
            request.META[ENVIRON_PREFIX + "route"] = (
                "/" + match.route if match is not None and match.url_name != "v1-not-found" else None
            )
            request_id_var.reset(rid_token)
            tenant_id_var.reset(tenant_token)
        response[REQUEST_ID_HEADER] = rid
        return response


def _tenant_id(request: HttpRequest) -> str | None:
    tenant = getattr(getattr(request, "user", None), "tenant", None)
    return str(tenant.id) if tenant is not None else None


# --- Celery: a line per task ---------------------------------------------------------------------

# task id -> what to restore when it ends: tasks run eagerly inside another task's run (tests, the
# sweeps in eager mode) end before their caller, which keeps its own ids.
_running: dict[str, tuple[Token[str | None], Token[str | None], float]] = {}


def task_started(*, task_id: str, task: Any, args: Any) -> None:
    from tenants.tasks import TenantTask

    tenant = str(args[0]) if isinstance(task, TenantTask) and args else None
    _running[task_id] = (task_id_var.set(task_id), tenant_id_var.set(tenant), time.perf_counter())


def task_finished(*, task_id: str, task: Any, state: str | None) -> None:
    from config import metrics

    running = _running.pop(task_id, None)
    seconds = time.perf_counter() - running[2] if running is not None else 0.0
    name = getattr(task, "name", "?")
    metrics.TASKS.labels(name, state or "UNKNOWN").inc()
    metrics.TASK_SECONDS.labels(name).observe(seconds)
    task_logger.info("task", extra={"task": name, "state": state or "UNKNOWN", "duration_ms": round(seconds * 1000, 1)})
    if running is not None:
        task_id_var.reset(running[0])
        tenant_id_var.reset(running[1])

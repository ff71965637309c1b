"""Gunicorn hooks for the web process: `gunicorn -c config/gunicorn_conf.py config.wsgi` (make run, the
image, the latency benchmark)."""

import gc
import json
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gunicorn.glogging import Logger


def access_line(*, environ: dict[str, Any], status: str, sent: int | None, duration: timedelta) -> dict[str, Any]:
    """The request's line: what config.logs.RequestContextMiddleware left in the environ, and the
    route pattern, never the path or the query string (they hold subject ids)."""
    return {
        "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "level": "INFO",
        "logger": "gunicorn.access",
        "message": "request",
        "request_id": environ.get("engram.request_id"),
        "tenant_id": environ.get("engram.tenant_id"),
        "method": environ.get("REQUEST_METHOD"),
        "route": environ.get("engram.route"),
        "status": int(str(status).split(None, 1)[0]),
        "bytes": sent,
        "duration_ms": round(duration.total_seconds() * 1000, 1),
        "remote_addr": environ.get("REMOTE_ADDR"),
    }


def access_text(line: dict[str, Any]) -> str:
    """The same line for a person at a terminal, shaped like config.logs.PlainFormatter's."""
    ids = " ".join(f"{key}={line[key]}" for key in ("request_id", "tenant_id") if line.get(key) is not None)
    return (
        f"{line['time']} INFO {line['logger']} {line['method']} {line['route'] or '-'} {line['status']}"
        f" {line['duration_ms']} ms [{ids}]"
    )


def access_plain(*, configured: str, isatty: bool) -> bool:
    # config.logs.log_format_choose's rule; this file cannot import the `config` package (see below).
    return configured == "plain" or (configured == "auto" and isatty)


class JsonAccessLogger(Logger):
    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: timedelta) -> None:
        if not (self.cfg.accesslog or self.cfg.logconfig or self.cfg.logconfig_dict or self.cfg.syslog):
            return
        try:
            line = access_line(environ=environ, status=resp.status, sent=resp.sent, duration=request_time)
            self.access_log.info(access_text(line) if ACCESS_PLAIN else json.dumps(line))
        except Exception:  # noqa: BLE001 - like gunicorn's own access(): a log line never breaks a response
            self.error("Failed to format the access log line", exc_info=True)


# One access line per request on stdout, where the container's log driver collects it. The class is
# defined here because the master must not import the `config` package: its Celery module would choose
# a settings module for the workers.
accesslog = "-"
logger_class = JsonAccessLogger
ACCESS_PLAIN = access_plain(configured=os.environ.get("LOG_FORMAT", "json"), isatty=sys.stdout.isatty())

# X-Forwarded-Proto (and gunicorn's other secure-scheme headers) is believed only from the reverse
# proxies the deployment names, the list from which Django reads X-Forwarded-For (core/addresses.py).
# Unset, no one is believed: gunicorn's own default trusts loopback.
forwarded_allow_ips = os.environ.get("ENGRAM_TRUSTED_PROXIES", "")

# Limits and timeouts, set here rather than left to gunicorn's defaults (docs/production.md). gunicorn
# answers past them itself, with a short HTML page, before Django runs:
# - the request line: its maximum, so that every URL the API forms fits (a 255-character id of 4-byte
#   characters is 3,060 bytes percent-encoded, a cursor up to 1,000): 414 past 8,190 bytes;
# - headers: 100 fields of at most 8,190 bytes each, 431 past them (the application refuses an
#   Idempotency-Key over 255 characters itself, as problem+json);
# - a worker silent for `timeout` seconds is restarted; `graceful_timeout` to finish on a restart;
#   `keepalive` for the next request on a connection (a reverse proxy reuses its connections).
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
timeout = 30
graceful_timeout = 30
keepalive = 5

# A body that stops arriving (a Content-Length larger than what is sent) would hold its thread for as
# long as the client keeps the connection open: gthread reads the body from a blocking socket with no
# timeout. Every read of the request now waits at most this long for the next bytes; the parser then
# answers 400 (api/parsers.py).
BODY_TIMEOUT_SECONDS = float(os.environ.get("ENGRAM_BODY_TIMEOUT_SECONDS", "15"))


def pre_request(worker: Any, req: Any) -> None:
    sock = getattr(getattr(req, "unreader", None), "sock", None)
    if sock is not None:
        sock.settimeout(BODY_TIMEOUT_SECONDS)


# Every worker counts on its own; in multiprocess mode /metrics adds them up (config/metrics.py). The
# directory must be known before a worker imports prometheus_client, so it is chosen here, in the master.
_own_metrics_dir = ""
if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    _own_metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="engram-metrics-")


# The hooks below run in the master too, so they use prometheus_client alone.


def on_starting(server: Any) -> None:
    # A previous run's counters must not be added to this one's.
    directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.glob("*.db"):
        path.unlink(missing_ok=True)


def on_exit(server: Any) -> None:
    if _own_metrics_dir:
        shutil.rmtree(_own_metrics_dir, ignore_errors=True)


def child_exit(server: Any, worker: Any) -> None:
    # A dead worker's live gauges go; its counters stay, since what it counted happened.
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)


def post_worker_init(worker: Any) -> None:
    # Otherwise the first request of each worker pays for what is loaded once and kept, while its
    # client waits: the embedding model (seconds), the URL configuration with every API module it
    # imports (0.5 s) and the tokeniser's tables (0.15 s). A worker takes requests once this returns.
    from django.urls import get_resolver

    from core.embedding import embed_one
    from core.tokens import encoding

    embed_one("warm up")
    get_resolver().url_patterns  # noqa: B018 - the import of every urls module is the point
    encoding()
    # What is loaded now lives as long as the worker: half a million objects (torch, transformers,
    # Django). A full collection walks them all, 250 ms on a 2-core machine, and lands on whichever
    # request is running (the p99 of the latency benchmark). Frozen, they are left out of collections.
    gc.collect()
    gc.freeze()
    # A context request leaves few cycles but allocates tens of thousands of containers that die young;
    # at the default threshold (700) it triggered about five young collections, 1.5-3 ms in all.
    gc.set_threshold(10_000, 10, 10)


def worker_exit(server: Any, worker: Any) -> None:
    # The helper threads' connections would otherwise be dropped without a goodbye to PostgreSQL.
    from router.helper_threads import close_readers

    close_readers()

"""Gunicorn set-up of the web process: `gunicorn -c config/gunicorn_conf.py config.asgi:application` (make
run, the image, the latency benchmark): its asyncio worker and protocol, limits, access line and hooks."""

import gc
import json
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import Any

from gunicorn.asgi.protocol import ASGIProtocol
from gunicorn.glogging import Logger
from gunicorn.workers import gasgi
from gunicorn.workers.gasgi import ASGIWorker


def access_line(*, environ: dict[str, Any], status: str | int, sent: int | None, duration: Any) -> dict[str, Any]:
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
        "status": int(environ.get("engram.status") or str(status).split(None, 1)[0]),
        "bytes": sent,
        # A timedelta, or the asyncio worker's stand-in with the same `seconds` and `microseconds`.
        "duration_ms": round(duration.seconds * 1000 + duration.microseconds / 1000, 1),
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
    def access(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> None:
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
# answers past them itself, before Django runs, with the problem+json bodies of FrontProtocol below:
# - the request line: its maximum, so that every URL the API forms fits (a 255-character id of 4-byte
#   characters is 3,060 bytes percent-encoded, a cursor up to 1,000): 414 past 8,190 bytes;
# - headers: 100 fields of at most 8,190 bytes each, 431 past them (the application refuses an
#   Idempotency-Key over 255 characters itself, as problem+json);
# - the headers of a new connection must be complete within HEADER_TIMEOUT_SECONDS (408 and closed);
#   an idle kept-alive connection is closed after `keepalive` seconds;
# - a worker whose event loop is silent for `timeout` seconds is restarted; `graceful_timeout` to
#   finish on a restart; `keepalive` for the next request on a connection (a proxy reuses them);
# - `worker_connections`: the connections one worker holds at once, slow ones included.
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
timeout = 30
graceful_timeout = 30
keepalive = 5
worker_connections = 1000
HEADER_TIMEOUT_SECONDS = float(os.environ.get("ENGRAM_HEADER_TIMEOUT_SECONDS", "10"))

# What gunicorn says before the application runs, as the API says it (api/problems.py): a fixed title
# and detail per status, never gunicorn's message, which can quote the request.
FRONT_PROBLEMS: dict[int, tuple[str, str, str]] = {
    400: ("Malformed request", "malformed-request", "The request is not valid HTTP/1.1."),
    408: ("Request timeout", "request-timeout", "The request's headers did not arrive in time."),
    414: ("URI too long", "uri-too-long", f"The request line is longer than {limit_request_line} bytes."),
    431: (
        "Request header fields too large",
        "header-fields-too-large",
        f"More than {limit_request_fields} header fields, or one longer than {limit_request_field_size} bytes.",
    ),
    500: ("Internal error", "internal", "The server failed to answer this request."),
    501: (
        "Not implemented",
        "not-implemented",
        "This transfer coding is not supported: send Content-Length or Transfer-Encoding: chunked.",
    ),
}


def front_problem(status: int) -> bytes:
    title, slug, detail = FRONT_PROBLEMS.get(status, ("Error", "error", "The request was refused."))
    body = {"type": f"/problems/{slug}", "title": title, "status": status, "detail": detail}
    return json.dumps(body).encode()


class FrontProtocol(ASGIProtocol):
    """gunicorn's HTTP/1.1 protocol with three changes: its own error answers are problem+json; the
    headers of a new connection have HEADER_TIMEOUT_SECONDS to arrive (gunicorn times only kept-alive
    connections); the access line gets the ids the request's environ carried (config/front.py)."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._engram_scopes: dict[Any, dict[str, Any]] = {}
        self._engram_header_timer = self.worker.loop.call_later(HEADER_TIMEOUT_SECONDS, self._engram_header_timeout)

    def _engram_header_timeout(self) -> None:
        if self._current_request is None and self.req_count <= 1 and not self._closed:
            self._send_error_response(408, "")
            self._close_transport()

    def _on_headers_complete(self) -> Any:
        self._engram_header_timer.cancel()
        return super()._on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        timer = getattr(self, "_engram_header_timer", None)
        if timer is not None:
            timer.cancel()
        super().connection_lost(exc)

    def _send_error_response(self, status: int, message: str, extra_headers: Any = ()) -> None:
        body = front_problem(status)
        reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
        extra = "".join(f"{name}: {value}\r\n" for name, value in extra_headers)
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/problem+json\r\n"
            f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n"
        )
        self._safe_write(head.encode("latin-1") + body)

    def _build_http_scope(self, request: Any, sockname: Any, peername: Any) -> dict[str, Any]:
        scope: dict[str, Any] = super()._build_http_scope(request, sockname, peername)
        self._engram_scopes[request] = scope
        return scope

    def _build_environ(self, request: Any, sockname: Any, peername: Any) -> dict[str, Any]:
        environ: dict[str, Any] = super()._build_environ(request, sockname, peername)
        scope = self._engram_scopes.pop(request, None) or {}
        environ.update(scope.get("engram.log") or {})
        return environ


class FrontWorker(ASGIWorker):
    """gunicorn's asyncio worker serving FrontProtocol: no thread waits on a client (config/front.py)."""

    def init_process(self) -> None:
        # The worker builds its protocol by this module-level name (gunicorn.workers.gasgi._serve).
        gasgi.ASGIProtocol = FrontProtocol
        super().init_process()


worker_class = FrontWorker


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

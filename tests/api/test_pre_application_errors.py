"""Errors produced before a view runs, and clients too slow to finish a request: a Host not allowed is a
problem from Django; what gunicorn refuses (the limits config/gunicorn_conf.py sets) and what the front
refuses (config/front.py: a body over the limit or too slow) are problems too, never HTML; and a client
that sends its request slowly holds no thread (issue 40, items 6 and 8)."""

from __future__ import annotations

import json
import socket
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.test import Client

from tests.conftest import TenantContext
from tests.support.gunicorn_server import gunicorn_server

PROBLEM = "application/problem+json"


@pytest.mark.django_db
def test_a_host_not_allowed_is_a_400_problem(ctx_a: TenantContext) -> None:
    response = Client().get("/v1/tenant", HTTP_HOST="evil.example", HTTP_AUTHORIZATION=f"Bearer {ctx_a.raw_key}")
    assert response.status_code == 400
    assert response["Content-Type"] == PROBLEM
    assert response.json()["status"] == 400


@pytest.fixture(scope="module")
def gunicorn_base(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("gunicorn") / "web.log"
    env = {
        "ENGRAM_BODY_TIMEOUT_SECONDS": "3",
        "ENGRAM_BODY_DEADLINE_SECONDS": "20",
        "ENGRAM_HEADER_TIMEOUT_SECONDS": "3",
    }
    with gunicorn_server(log_path=log, env=env) as base:
        yield base


def _raw(base: str, request: bytes, *, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    with socket.create_connection(_address(base), timeout=timeout) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


@pytest.mark.slow
def test_a_body_shorter_than_its_content_length_is_a_400_after_the_body_timeout(
    transactional_db: None, gunicorn_base: str, ctx_a: TenantContext
) -> None:
    request = (
        "POST /v1/facts/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {ctx_a.raw_key}\r\nContent-Length: 100\r\n\r\n"
    ).encode() + b'{"query": '
    started = time.monotonic()
    status, headers, body = _raw(gunicorn_base, request)
    assert status == 400, body
    assert headers["content-type"] == PROBLEM
    assert time.monotonic() - started < 15


@pytest.mark.slow
def test_every_url_the_api_can_form_fits_the_request_line(
    transactional_db: None, gunicorn_base: str, ctx_a: TenantContext
) -> None:
    # A 255-character subject of 4-byte characters, percent-encoded, with a 1,000-character cursor.
    subject = "%F0%9F%98%80" * 255
    path = f"/v1/episodes?subject={subject}&cursor={'A' * 1000}"
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {ctx_a.raw_key}\r\n"
    status, headers, body = _raw(gunicorn_base, (request + "Connection: close\r\n\r\n").encode())
    assert status == 400, body  # the cursor is refused by the application, as problem+json
    assert headers["content-type"] == PROBLEM
    problem: dict[str, Any] = json.loads(body)
    assert problem["errors"][0]["pointer"] == "/cursor"


def test_gunicorn_limits_are_set_deliberately(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.production.test_proxy_trust import _gunicorn_settings

    cfg = _gunicorn_settings(monkeypatch, tmp_path)
    assert cfg.limit_request_line == 8190
    assert cfg.limit_request_fields == 100
    assert cfg.limit_request_field_size == 8190
    assert cfg.timeout == 30 and cfg.graceful_timeout == 30 and cfg.keepalive == 5
    assert cfg.worker_connections == 1000


@pytest.mark.django_db
def test_a_host_not_allowed_is_a_400_problem_with_debug_pages_on(settings: Any, ctx_a: TenantContext) -> None:
    """DJANGO_DEBUG=true (asked for) shows Django's debug pages, but a request for another host (DNS
    rebinding to a laptop's `make run`) gets no page: the debug page printed every setting."""
    settings.DEBUG = True
    for path in ("/v1/tenant", "/admin/", "/nowhere"):
        response = Client().get(path, HTTP_HOST="evil.example.com", HTTP_AUTHORIZATION=f"Bearer {ctx_a.raw_key}")
        assert response.status_code == 400, path
        assert response["Content-Type"] == PROBLEM, path
        assert b"DATABASE" not in response.content and b"evil" not in response.content


def test_a_debug_page_if_asked_for_hides_every_address_with_credentials(settings: Any) -> None:
    from django.views.debug import get_default_exception_reporter_filter

    settings.DATABASE_OWNER_URL = "postgres://postgres@10.0.0.5:5432/engram"
    safe = get_default_exception_reporter_filter().get_safe_settings()
    for name in ("DATABASE_OWNER_URL", "REDIS_URL", "CELERY_BROKER_URL"):
        assert "postgres" not in str(safe[name]) and "redis:" not in str(safe[name]), name
    assert "6379" not in str(safe["CACHES"])


@pytest.mark.django_db
def test_a_404_and_a_500_outside_v1_are_problems() -> None:
    from django.test import RequestFactory
    from django.urls import get_resolver

    response = Client().get("/no/such/page")
    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM
    assert b"URLconf" not in response.content
    failed = get_resolver().resolve_error_handler(500)(RequestFactory().get("/admin/"))
    assert failed.status_code == 500 and failed["Content-Type"] == PROBLEM


def _address(base: str) -> tuple[str, int]:
    parts = urlsplit(base)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


@pytest.mark.slow
@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414),
        (b"GET /v1/tenant HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + b"k" * 10_000 + b"\r\n\r\n", 431),
        (b"GET /v1/tenant HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Note: a\x01b\r\n\r\n", 400),
        (b"POST /v1/facts HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: junk\r\n\r\n", 501),
        (b"GET /v1/tenant HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"X-Many: 1\r\n" * 101 + b"\r\n", 431),
    ],
    ids=["request-line-414", "long-header-431", "control-byte-400", "transfer-coding-501", "header-count-431"],
)
def test_what_the_server_refuses_before_the_application_is_a_problem(
    transactional_db: None, gunicorn_base: str, request_bytes: bytes, status: int
) -> None:
    got, headers, body = _raw(gunicorn_base, request_bytes)
    assert got == status, body
    assert headers["content-type"] == PROBLEM
    problem: dict[str, Any] = json.loads(body)
    assert problem["status"] == status and problem["title"] and problem["detail"]
    assert b"<" not in body


@pytest.mark.slow
def test_headers_that_stop_arriving_are_a_408_problem_after_the_header_timeout(
    transactional_db: None, gunicorn_base: str
) -> None:
    started = time.monotonic()
    status, headers, body = _raw(gunicorn_base, b"GET /v1/tenant HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half")
    assert status == 408, body
    assert headers["content-type"] == PROBLEM
    assert time.monotonic() - started < 15


@pytest.mark.slow
def test_a_chunked_body_over_the_limit_is_a_413_problem_while_it_is_read(
    transactional_db: None, gunicorn_base: str, ctx_a: TenantContext
) -> None:
    from django.conf import settings

    limit = settings.ENGRAM["MAX_BODY_BYTES"]
    chunk = b"x" * (1024 * 1024)
    head = (
        "POST /v1/facts/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {ctx_a.raw_key}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    with socket.create_connection(_address(gunicorn_base), timeout=30) as sock:
        sock.sendall(head)
        try:
            for _ in range(limit // len(chunk) + 2):
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        except OSError:
            pass  # the server answered and closed while the body was still coming
        data = b""
        while piece := sock.recv(65536):
            data += piece
    head_part, _, body = data.partition(b"\r\n\r\n")
    assert head_part.split()[1] == b"413", data[:300]
    assert b"application/problem+json" in head_part
    assert json.loads(body)["status"] == 413


class _SlowClients:
    """Connections that hold a request open: half its headers, or its headers and a body that comes a
    byte a second. All loopback, all closed when the block ends."""

    def __init__(self, base: str, *, key: str, count: int) -> None:
        self.address = _address(base)
        self.key = key
        self.count = count
        self.socks: list[socket.socket] = []

    def __enter__(self) -> _SlowClients:
        for i in range(self.count):
            sock = socket.create_connection(self.address, timeout=10)
            if i % 2:
                sock.sendall(b"GET /v1/tenant HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bea")
            else:
                sock.sendall(
                    (
                        "POST /v1/facts/search HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        f"Authorization: Bearer {self.key}\r\nContent-Length: 100\r\n\r\n{{"
                    ).encode()
                )
            self.socks.append(sock)
        return self

    def trickle(self) -> None:
        for sock in self.socks[::2]:
            try:
                sock.sendall(b" ")
            except OSError:
                pass

    def __exit__(self, *exc: object) -> None:
        for sock in self.socks:
            sock.close()


def _timed_get(base: str, path: str, key: str) -> tuple[int, float]:
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {key}"})  # noqa: S310
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - our own loopback server
            return int(response.status), time.monotonic() - started
    except TimeoutError:
        return 0, time.monotonic() - started


@pytest.mark.slow
def test_64_slow_clients_hold_no_thread_and_an_ordinary_request_answers_within_a_second(
    transactional_db: None, gunicorn_base: str, ctx_a: TenantContext
) -> None:
    """Issue 40, item 6: with 1 worker of 2 request threads, 64 connections that send half their headers
    or a body a byte a second held every thread (gthread gives a connection its thread at its first
    byte), and an ordinary request waited for their timeouts. The 1 s is the finding's own target; the
    best of three tries is taken, so one scheduling hiccup of a loaded machine does not decide it,
    while a server whose threads are held fails all three."""
    status, _ = _timed_get(gunicorn_base, "/v1/tenant", ctx_a.raw_key)  # warm: the first request loads the URLs
    assert status == 200
    with _SlowClients(gunicorn_base, key=ctx_a.raw_key, count=64) as slow:
        time.sleep(0.5)
        slow.trickle()
        timings = []
        for _ in range(3):
            status, seconds = _timed_get(gunicorn_base, "/v1/tenant", ctx_a.raw_key)
            timings.append(seconds)
            slow.trickle()
        assert min(timings) < 1.0, timings
        assert status == 200

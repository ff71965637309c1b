"""Errors produced before a view runs: problem+json where Django produces them (a Host not allowed); where
gunicorn does, its limits are the ones config/gunicorn_conf.py sets, and a body that stops arriving is a
400 after the body timeout, not a thread held for as long as the client likes."""

from __future__ import annotations

import json
import socket
import time
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
    with gunicorn_server(log_path=log, env={"ENGRAM_BODY_TIMEOUT_SECONDS": "2"}) as base:
        yield base


def _raw(base: str, request: bytes, *, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(base)
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout) as sock:
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
    handler, _ = get_resolver().resolve_error_handler(500), None
    failed = handler(RequestFactory().get("/admin/"))
    assert failed.status_code == 500 and failed["Content-Type"] == PROBLEM

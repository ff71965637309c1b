"""A body sent with Transfer-Encoding (chunked, no Content-Length) is read whole with the size limit, or
refused with 411: never read as an empty body. Raw requests against the live server (Django's, which
does not decode chunked bodies) and against gunicorn (which does)."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from pytest_django.live_server_helper import LiveServer

from tests.api.fuzzing import Route, v1_routes
from tests.conftest import TenantContext
from tests.support.gunicorn_server import gunicorn_server

pytestmark = pytest.mark.live

PROBLEM = "application/problem+json"
SAMPLE_PARAMS = {"uuid": "00000000-0000-0000-0000-000000000001", "int": "1"}


def send(
    base: str, method: str, path: str, key: str, body: bytes | Iterable[bytes], headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """One request on a fresh connection; an iterable body goes out chunked (http.client's encoding)."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    try:
        all_headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json", **(headers or {})}
        chunked = not isinstance(body, bytes)
        try:
            conn.request(method, path, body=body, headers=all_headers, encode_chunked=chunked)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered (411) before the last chunk: its answer is still there to read
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def chunks(data: bytes, size: int = 7) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def concrete(template: str) -> str:
    path = template
    for converter, name in Route(template, ()).converters:
        value = SAMPLE_PARAMS.get(converter, "s-1")
        path = path.replace(f"<{converter}:{name}>", value).replace(f"<{name}>", value)
    return path


def write_operations() -> list[tuple[str, str]]:
    return [
        (method, concrete(route.template))
        for route in v1_routes()
        for method in route.methods
        if method in ("POST", "PUT", "PATCH")
    ]


def test_a_chunked_scratchpad_put_never_wipes_the_document(live_server: LiveServer, ctx_a: TenantContext) -> None:
    url = "/v1/sessions/s-1/scratchpad"
    base = live_server.url
    episode = {"subject": "u-1", "session": "s-1", "kind": "message", "role": "user", "content": "hello"}
    status, _, _ = send(base, "POST", "/v1/episodes", ctx_a.raw_key, json.dumps({"episodes": [episode]}).encode())
    assert status == 201
    status, _, _ = send(base, "PUT", url, ctx_a.raw_key, json.dumps({"goal": "old"}).encode())
    assert status == 201

    status, headers, body = send(base, "PUT", url, ctx_a.raw_key, chunks(json.dumps({"goal": "new"}).encode()))

    assert status in (200, 411), body
    stored = json.loads(send(base, "GET", url, ctx_a.raw_key, b"")[2])["document"]
    if status == 411:
        assert headers["content-type"] == PROBLEM
        assert json.loads(body)["status"] == 411
        assert stored == {"goal": "old"}
    else:
        assert stored == {"goal": "new"}


@pytest.mark.parametrize(("method", "path"), write_operations())
def test_every_write_route_refuses_a_chunked_body_it_cannot_read(
    live_server: LiveServer, ctx_a: TenantContext, method: str, path: str
) -> None:
    status, headers, body = send(live_server.url, method, path, ctx_a.raw_key, chunks(b'{"a": 1}'))
    assert status == 411, (status, body)
    assert headers["content-type"] == PROBLEM
    problem: dict[str, Any] = json.loads(body)
    assert problem["status"] == 411


@pytest.fixture(scope="module")
def gunicorn_base(django_db_setup: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with gunicorn_server(log_path=tmp_path_factory.mktemp("gunicorn") / "web.log") as base:
        yield base


@pytest.mark.slow
def test_gunicorn_reads_a_chunked_body_whole(transactional_db: None, gunicorn_base: str, ctx_a: TenantContext) -> None:
    url = "/v1/sessions/s-1/scratchpad"
    episode = {"subject": "u-1", "session": "s-1", "kind": "message", "role": "user", "content": "hello"}
    body = json.dumps({"episodes": [episode]}).encode()
    assert send(gunicorn_base, "POST", "/v1/episodes", ctx_a.raw_key, chunks(body, 5))[0] == 201
    assert send(gunicorn_base, "PUT", url, ctx_a.raw_key, b'{"goal": "old"}')[0] == 201

    status, _, answer = send(gunicorn_base, "PUT", url, ctx_a.raw_key, chunks(json.dumps({"goal": "new"}).encode()))

    assert status == 200, answer
    assert json.loads(send(gunicorn_base, "GET", url, ctx_a.raw_key, b"")[2])["document"] == {"goal": "new"}


@pytest.mark.slow
@pytest.mark.parametrize("method", ["PUT", "PATCH"])
def test_gunicorn_refuses_an_empty_chunked_scratchpad_body_and_keeps_the_document(
    transactional_db: None, gunicorn_base: str, ctx_a: TenantContext, method: str
) -> None:
    url = "/v1/sessions/s-1/scratchpad"
    episode = {"subject": "u-1", "session": "s-1", "kind": "message", "role": "user", "content": "hello"}
    assert (
        send(gunicorn_base, "POST", "/v1/episodes", ctx_a.raw_key, json.dumps({"episodes": [episode]}).encode())[0]
        == 201
    )
    assert send(gunicorn_base, "PUT", url, ctx_a.raw_key, b'{"goal": "old"}')[0] == 201

    status, headers, answer = send(gunicorn_base, method, url, ctx_a.raw_key, iter([b""]))

    assert status == 400, answer
    assert headers["content-type"] == PROBLEM
    assert json.loads(send(gunicorn_base, "GET", url, ctx_a.raw_key, b"")[2])["document"] == {"goal": "old"}


@pytest.mark.slow
def test_gunicorn_refuses_a_chunked_body_over_the_limit_with_413(
    transactional_db: None, gunicorn_base: str, ctx_a: TenantContext
) -> None:
    episode = {"subject": "u-1", "session": "s-1", "kind": "message", "role": "user", "content": "hello"}
    body = json.dumps({"episodes": [episode]}).encode()
    assert send(gunicorn_base, "POST", "/v1/episodes", ctx_a.raw_key, body)[0] == 201
    huge = b'{"goal": "' + b"x" * (10 * 1024 * 1024) + b'"}'
    status, headers, body = send(
        gunicorn_base, "PUT", "/v1/sessions/s-1/scratchpad", ctx_a.raw_key, chunks(huge, 65536)
    )
    assert status == 413, body
    assert headers["content-type"] == PROBLEM

"""Retry, backoff and timeout behaviour, against a small real HTTP server on the loopback that answers
from a script (the live service cannot be made to fail on demand)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from engram_client import EngramClient, RetryPolicy, ServerError, TransportError
from engram_client._transport import parse_retry_after
from hypothesis import given
from hypothesis import strategies as st


class Script:
    def __init__(self) -> None:
        self.answers: list[tuple[int, dict[str, str], float]] = []
        self.seen: list[tuple[str, str, dict[str, str]]] = []


@pytest.fixture
def stub() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            script.seen.append((self.command, self.path, dict(self.headers)))
            status, headers, delay = script.answers.pop(0) if script.answers else (200, {}, 0.0)
            if delay:
                time.sleep(delay)
            body = json.dumps({"status": status, "title": "scripted", "detail": "from the stub"}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/problem+json" if status >= 400 else "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()


def test_5xx_is_retried_with_growing_backoff_then_succeeds(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(503, {}, 0.0), (502, {}, 0.0), (200, {}, 0.0)]
    waits: list[float] = []
    policy = RetryPolicy(max_retries=3, backoff_base=1.0, backoff_max=8.0)
    with EngramClient(url, "k", retry=policy, sleep=waits.append) as client:
        assert client.stats() == {"status": 200, "title": "scripted", "detail": "from the stub"}
    assert len(script.seen) == 3
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0


def test_every_attempt_of_a_post_carries_the_same_idempotency_key(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(500, {}, 0.0), (200, {}, 0.0)]
    with EngramClient(url, "k", retry=RetryPolicy(backoff_base=0.0), sleep=lambda s: None) as client:
        client.feedback("t1", used_item_ids=["fact:1"])
    keys = [headers.get("Idempotency-Key") for _, _, headers in script.seen]
    assert len(keys) == 2 and keys[0] and keys[0] == keys[1]
    assert script.seen[0][2]["Authorization"] == "Bearer k"


def test_gives_up_after_max_retries_with_the_problem_fields(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(503, {"Retry-After": "2"}, 0.0)] * 3
    waits: list[float] = []
    with EngramClient(url, "k", retry=RetryPolicy(max_retries=2), sleep=waits.append) as client:
        with pytest.raises(ServerError) as caught:
            client.stats()
    assert waits == [2.0, 2.0]
    assert caught.value.status == 503 and caught.value.detail == "from the stub"


def test_a_4xx_other_than_429_is_not_retried(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(404, {}, 0.0)]
    with EngramClient(url, "k", sleep=lambda s: None) as client, pytest.raises(Exception) as caught:
        client.facts.get("f1")
    assert getattr(caught.value, "status", None) == 404
    assert len(script.seen) == 1


def test_a_timeout_is_retried_then_reported(stub: tuple[str, Script]) -> None:
    url, script = stub
    script.answers = [(200, {}, 1.0), (200, {}, 1.0)]
    with EngramClient(url, "k", timeout=0.2, retry=RetryPolicy(max_retries=1), sleep=lambda s: None) as client:
        with pytest.raises(TransportError):
            client.stats()
    assert len(script.seen) == 2


def test_a_refused_connection_is_a_transport_error() -> None:
    with EngramClient("http://127.0.0.1:9", "k", retry=RetryPolicy(max_retries=1), sleep=lambda s: None) as client:
        with pytest.raises(TransportError):
            client.tenant()


def test_retry_after_as_an_http_date() -> None:
    when = datetime.now(UTC) + timedelta(seconds=30)
    parsed = parse_retry_after(format_datetime(when, usegmt=True))
    assert parsed is not None and 25 <= parsed <= 31
    assert parse_retry_after("garbage") is None
    assert parse_retry_after(None) is None


@given(attempt=st.integers(min_value=0, max_value=30), base=st.floats(min_value=0.01, max_value=5))
def test_backoff_never_exceeds_its_ceiling(attempt: int, base: float) -> None:
    policy = RetryPolicy(backoff_base=base, backoff_max=8.0)
    wait = policy.wait(attempt, None)
    ceiling = min(8.0, base * 2**attempt)
    assert ceiling / 2 <= wait <= ceiling


def test_api_key_is_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENGRAM_API_KEY", raising=False)
    with pytest.raises(ValueError, match="API key"):
        EngramClient("http://127.0.0.1:8000")

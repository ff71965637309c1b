"""Failed authentication is throttled; /metrics is not public on the API port."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from django.test import Client

from api import auth_failures

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


@pytest.fixture
def low_limits(settings, monkeypatch):  # type: ignore[no-untyped-def]
    settings.ENGRAM = {
        **settings.ENGRAM,
        "AUTH_FAILURES_PER_ADDRESS": 5,
        "AUTH_FAILURES_PER_PREFIX": 8,
        "AUTH_FAILURE_WINDOW_SECONDS": 300,
    }
    # The windows are fixed (epoch // 300): a test that straddled a boundary saw its count start over
    # (CI, 3 December). The limiter's clock stands in the middle of one window.
    monkeypatch.setattr(auth_failures, "time", SimpleNamespace(time=lambda: 1_800_000_150.0))


def _get(key: str, address: str = "10.0.0.1"):  # type: ignore[no-untyped-def]
    return Client().get("/v1/tenant", HTTP_AUTHORIZATION=f"Bearer {key}", REMOTE_ADDR=address)


def _get_forwarded(key: str, *, proxy: str, forwarded_for: str):  # type: ignore[no-untyped-def]
    return Client().get(
        "/v1/tenant", HTTP_AUTHORIZATION=f"Bearer {key}", REMOTE_ADDR=proxy, HTTP_X_FORWARDED_FOR=forwarded_for
    )


def test_failed_authentications_from_one_address_are_refused_with_a_429_problem(ctx_a, low_limits) -> None:
    for _ in range(5):
        assert _get("eng_0123abcd_wrong").status_code == 401
    refused = _get("eng_0123abcd_wrong")
    assert refused.status_code == 429
    assert refused["Content-Type"] == PROBLEM
    assert refused.json()["status"] == 429
    assert 0 < int(refused["Retry-After"]) <= 301
    assert _get("eng_0123abcd_wrong", address="10.0.0.2").status_code == 401


def test_a_right_key_passes_from_an_address_over_the_failure_limit(ctx_a, ctx_b, low_limits) -> None:
    # One tenant's bad keys behind a shared address (a NAT, a proxy) must not lock the others out.
    for _ in range(30):
        assert _get("eng_0123abcd_wrong").status_code in (401, 429)
    assert _get(ctx_a.raw_key).status_code == 200
    assert _get(ctx_b.raw_key).status_code == 200
    assert _get("eng_0123abcd_wrong").status_code == 429


def test_a_right_key_passes_however_often_its_prefix_was_guessed(ctx_a, ctx_b, low_limits) -> None:
    prefix = ctx_a.api_key.prefix
    for i in range(20):
        assert _get(f"eng_{prefix}_guess{i}", address=f"10.1.0.{i}").status_code in (401, 429)
    assert _get(f"eng_{prefix}_guess", address="10.2.0.1").status_code == 429
    assert _get(ctx_a.raw_key, address="10.2.0.1").status_code == 200
    assert _get(ctx_b.raw_key, address="10.2.0.1").status_code == 200


def test_successful_authentications_are_not_counted(ctx_a, low_limits) -> None:
    for _ in range(20):
        assert _get(ctx_a.raw_key).status_code == 200
    assert _get("eng_0123abcd_wrong").status_code == 401


def test_malformed_keys_count_as_failures(ctx_a, low_limits) -> None:
    for bad in ["x", "eng_", "eng_zz_y", "eng_\x00_y", "a b c"]:
        assert _get(bad).status_code == 401
    assert _get("x").status_code == 429
    assert _get(ctx_a.raw_key).status_code == 200


def test_behind_a_trusted_proxy_failures_are_counted_per_forwarded_client(ctx_a, low_limits, settings) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "TRUSTED_PROXIES": ["10.9.0.0/16"]}
    for _ in range(5):
        assert _get_forwarded("eng_0123abcd_wrong", proxy="10.9.0.1", forwarded_for="203.0.113.5").status_code == 401
    assert _get_forwarded("eng_0123abcd_wrong", proxy="10.9.0.1", forwarded_for="203.0.113.5").status_code == 429
    # Another client through the same proxy; the right-most untrusted address is the client, so a
    # client cannot pick its own by sending X-Forwarded-For to the proxy.
    assert _get_forwarded("eng_0123abcd_wrong", proxy="10.9.0.1", forwarded_for="203.0.113.6").status_code == 401
    spoofed = "203.0.113.99, 203.0.113.5"
    assert _get_forwarded("eng_0123abcd_wrong", proxy="10.9.0.2", forwarded_for=spoofed).status_code == 429


def test_x_forwarded_for_from_an_untrusted_peer_is_ignored(ctx_a, low_limits) -> None:
    for i in range(5):
        forwarded = f"203.0.113.{i}"
        assert _get_forwarded("eng_0123abcd_wrong", proxy="10.0.0.7", forwarded_for=forwarded).status_code == 401
    assert _get_forwarded("eng_0123abcd_wrong", proxy="10.0.0.7", forwarded_for="198.51.100.1").status_code == 429


def test_metrics_are_refused_to_an_address_off_the_allow_list(db) -> None:
    response = Client().get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert response.status_code == 403
    assert response["Content-Type"] == PROBLEM


def test_metrics_are_served_to_loopback_by_default(db) -> None:
    response = Client().get("/metrics", REMOTE_ADDR="127.0.0.1")
    assert response.status_code == 200
    assert b"django_http_requests" in response.content


def test_metrics_are_served_to_an_allowed_network(db, settings) -> None:
    settings.METRICS_ALLOWED_ADDRESSES = ["10.5.0.0/16"]
    assert Client().get("/metrics", REMOTE_ADDR="10.5.3.4").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 403


def test_metrics_with_a_token_need_the_token(db, settings) -> None:
    settings.METRICS_TOKEN = "s3cret-token"
    settings.METRICS_ALLOWED_ADDRESSES = []
    assert Client().get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 401
    wrong = Client().get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 401
    assert wrong["Content-Type"] == PROBLEM
    right = Client().get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert right.status_code == 200

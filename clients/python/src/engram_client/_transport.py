"""What the sync and async clients share: a described call, the retry policy, answer decoding."""

from __future__ import annotations

import dataclasses
import email.utils
import random
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeGuard, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx

from engram_client.errors import TransportError, error_for

T = TypeVar("T")

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _json(response: httpx.Response) -> Any:
    return response.json()


@dataclasses.dataclass(frozen=True)
class Call(Generic[T]):
    """One API operation, described; a client executes it (with retries) and `parse` shapes the answer."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    headers: Mapping[str, str] | None = None
    # POSTs carry an Idempotency-Key (generated unless given) so that a retry cannot write twice.
    idempotency_key: str | None = None
    content_type: str | None = None
    parse: Callable[[httpx.Response], T] = _json


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """Retry 429 and 5xx answers and transport failures with exponential backoff and full jitter;
    a Retry-After header, when the service sends one, sets the wait instead (capped by `max_wait`)."""

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_wait: float = 60.0
    statuses: frozenset[int] = RETRY_STATUSES

    def should_retry(self, attempt: int, response: httpx.Response | None) -> bool:
        if attempt >= self.max_retries:
            return False
        return response is None or response.status_code in self.statuses

    def wait(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            asked = parse_retry_after(response.headers.get("Retry-After"))
            if asked is not None:
                return min(asked, self.max_wait)
        ceiling = min(self.backoff_max, self.backoff_base * (2**attempt))
        return random.uniform(ceiling / 2, ceiling)


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds: either delay-seconds or an HTTP date (RFC 9110)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def build_request(client: httpx.Client | httpx.AsyncClient, call: Call[Any], key: str | None) -> httpx.Request:
    headers = dict(call.headers or {})
    if key is not None:
        headers["Idempotency-Key"] = key
    params = {k: _param(v) for k, v in (call.params or {}).items() if v is not None}
    if call.content_type is not None:
        import json as jsonlib

        headers["Content-Type"] = call.content_type
        return client.build_request(
            call.method, call.path, params=params, content=jsonlib.dumps(call.json).encode(), headers=headers
        )
    return client.build_request(call.method, call.path, params=params, json=call.json, headers=headers)


def idempotency_key_for(call: Call[Any]) -> str | None:
    if call.idempotency_key is not None:
        return call.idempotency_key
    return str(uuid.uuid4()) if call.method == "POST" else None


def finish(call: Call[T], response: httpx.Response) -> T:
    if response.status_code >= 400:
        raise error_for(response)
    return call.parse(response)


class Attempts(Generic[T]):
    """The retry loop of one call without its I/O: each client sends and sleeps, this decides.
    Every attempt of a POST carries the same Idempotency-Key."""

    def __init__(self, call: Call[T], retry: RetryPolicy) -> None:
        self.call = call
        self.retry = retry
        self.key = idempotency_key_for(call)
        self.attempt = 0

    def request(self, client: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        return build_request(client, self.call, self.key)

    def failed(self, exc: Exception) -> None:
        """A send that raised: tried again, unless the policy is spent (then a TransportError)."""
        if not self.retry.should_retry(self.attempt, None):
            raise TransportError(f"{self.call.method} {self.call.path}: {exc}") from exc

    def done(self, response: httpx.Response | None) -> TypeGuard[httpx.Response]:
        return response is not None and not self.retry.should_retry(self.attempt, response)

    def wait(self, response: httpx.Response | None) -> float:
        """How long to sleep before the next attempt (and count this one)."""
        seconds = self.retry.wait(self.attempt, response)
        self.attempt += 1
        return seconds


def _param(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def cursor_of(url: str | None) -> str | None:
    """The opaque cursor in a `next` link (the link's host is not trusted: behind a proxy it may differ)."""
    if not url:
        return None
    values = parse_qs(urlsplit(url).query).get("cursor")
    return values[0] if values else None

"""Write paths hammered by threads against the live server: real HTTP, real transactions, one
PostgreSQL connection per request thread (pytest-django's live server runs each request in its own
thread), Celery tasks run eagerly after each commit. Every call of a round waits at a barrier, so the
threads' requests overlap."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from pytest_django.live_server_helper import LiveServer

from tenants.models import Tenant
from tests.conftest import TenantContext

pytestmark = pytest.mark.live

THREADS = 8
Call = Callable[[httpx.Client], httpx.Response]


@dataclass
class Hammer:
    url: str
    key: str
    tenant: Tenant

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.key}"}, timeout=60)

    def run(self, calls: Sequence[Call]) -> list[httpx.Response]:
        """The calls at once, one thread and one connection each; no answer may be a 5xx."""
        barrier = threading.Barrier(len(calls))

        def one(call: Call) -> httpx.Response:
            with self.client() as client:
                barrier.wait(timeout=30)
                return call(client)

        with ThreadPoolExecutor(len(calls)) as pool:
            responses = list(pool.map(one, calls))
        errors = [
            (r.request.method, r.request.url.path, r.status_code, r.text[:300])
            for r in responses
            if r.status_code >= 500
        ]
        assert errors == []
        return responses

    def same(self, call: Call, threads: int = THREADS) -> list[httpx.Response]:
        return self.run([call] * threads)


def ok(response: httpx.Response, *codes: int) -> Any:
    assert response.status_code in (codes or (200, 201)), (response.status_code, response.text)
    return response.json()


def statuses(responses: Sequence[httpx.Response]) -> list[int]:
    return sorted(r.status_code for r in responses)


@pytest.fixture
def hammer(live_server: LiveServer, ctx_a: TenantContext) -> Iterator[Hammer]:
    # The per-tenant rate limit would answer some of the bursts with 429: not what is measured here.
    ctx_a.tenant.settings = {**ctx_a.tenant.settings, "rate_limit_per_minute": 0}
    ctx_a.tenant.save(update_fields=["settings"])
    yield Hammer(live_server.url, ctx_a.raw_key, ctx_a.tenant)


@pytest.fixture
def api(hammer: Hammer) -> Iterator[httpx.Client]:
    with hammer.client() as client:
        yield client

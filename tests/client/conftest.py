"""The client under test talks HTTP to the live server pytest-django starts on the test database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from engram_client import EngramClient, RetryPolicy
from pytest_django.live_server_helper import LiveServer

from tests.conftest import TenantContext

pytestmark = pytest.mark.live


@pytest.fixture
def engram(live_server: LiveServer, ctx_a: TenantContext) -> Iterator[EngramClient]:
    with EngramClient(live_server.url, ctx_a.raw_key, retry=RetryPolicy(max_retries=2, backoff_base=0.01)) as client:
        yield client


@pytest.fixture
def engram_b(live_server: LiveServer, ctx_b: TenantContext) -> Iterator[EngramClient]:
    with EngramClient(live_server.url, ctx_b.raw_key, retry=RetryPolicy(max_retries=2, backoff_base=0.01)) as client:
        yield client

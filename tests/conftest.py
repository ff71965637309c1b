"""Suite-wide fixtures: the database as the application role, a clean Redis, two tenants with keys, the
production embedder, and ending a session as the worker does."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from core.redis import get_redis
from tenants.dbroles import switch_connection_user
from tenants.models import ApiKey, Tenant
from tenants.services import api_key_create
from tests.embedders import using_embedder
from tests.factories.tenants import TenantFactory

ISOLATION_COVERED: set[str] = set()


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in item.iter_markers("isolation"):
            ISOLATION_COVERED.update(marker.args)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: pytest.FixtureRequest) -> Iterator[None]:
    """The test database was created and migrated by the owner; the tests run as the worker's role
    (tasks run eagerly here, and erasure needs it), which like the application role is neither
    superuser nor BYPASSRLS, so row-level security is in force."""
    creds = getattr(settings, "ENGRAM_TEST_WORKER_CREDENTIALS", None)
    if creds is None:
        yield
        return
    owner = (settings.DATABASES["default"]["USER"], settings.DATABASES["default"]["PASSWORD"])
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        switch_connection_user("default", *creds)
    yield
    with django_db_blocker.unblock():  # type: ignore[attr-defined]
        switch_connection_user("default", *owner)


@pytest.fixture(autouse=True)
def _clean_redis() -> Iterator[None]:
    get_redis().flushdb()
    yield


@dataclass
class TenantContext:
    tenant: Tenant
    api_key: ApiKey
    raw_key: str
    client: APIClient


def _tenant_context(name: str, scopes: tuple[str, ...] = ("read", "write", "admin")) -> TenantContext:
    tenant = TenantFactory(name=name, slug=name.lower().replace(" ", "-"))
    issued = api_key_create(tenant=tenant, name="test", scopes=scopes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    return TenantContext(tenant=tenant, api_key=issued.api_key, raw_key=issued.raw, client=client)


@pytest.fixture
def ctx_a(db: None) -> TenantContext:
    return _tenant_context("Tenant A")


@pytest.fixture
def ctx_b(db: None) -> TenantContext:
    return _tenant_context("Tenant B")


@pytest.fixture
def tenant_a(ctx_a: TenantContext) -> Tenant:
    return ctx_a.tenant


@pytest.fixture
def tenant_b(ctx_b: TenantContext) -> Tenant:
    return ctx_b.tenant


@pytest.fixture
def api_a(ctx_a: TenantContext) -> APIClient:
    return ctx_a.client


@pytest.fixture
def api_b(ctx_b: TenantContext) -> APIClient:
    return ctx_b.client


@pytest.fixture
def anon_api() -> APIClient:
    return APIClient()


@pytest.fixture
def minilm(settings: Any) -> Iterator[None]:
    """The production embedder (the update tests need MiniLM's real similarities, e.g. of "PostgreSQL 15"
    and "16")."""
    with using_embedder(settings, "core.embedding.OnnxMiniLMEmbedder"):
        yield


@pytest.fixture
def end_session(api_a: Any, django_capture_on_commit_callbacks: Any) -> Callable[[str], None]:
    def end(session: str) -> None:
        # The request enqueues consolidation on commit; running the callbacks is what the worker does.
        with django_capture_on_commit_callbacks(execute=True):
            assert api_a.post(f"/v1/sessions/{session}/end", {}, format="json").status_code == 200

    return end

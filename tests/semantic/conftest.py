"""Helpers for semantic memory tests: write candidates through the merge inside the tenant's scope."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from core.embedding import embedding_cache, get_embedder
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate, UpsertResult
from tenants.models import Tenant
from tenants.scope import tenant_scope

T0 = datetime(2025, 1, 1, tzinfo=UTC)
ACTOR = Actor(type="consolidation", id="run-1")


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


def candidate(**overrides: Any) -> FactCandidate:
    fields: dict[str, Any] = {
        "subject": "user-1",
        "entity": "user-1",
        "attribute": "database",
        "value": "PostgreSQL",
        "statement": "The user's database is PostgreSQL.",
        "category": "technical_environment",
        "confidence": 0.8,
        "source_episode_ids": [],
        "observed_at": None,
    }
    fields.update(overrides)
    if "statement" not in overrides and "value" in overrides:
        fields["statement"] = f"The {fields['attribute'].replace('_', ' ')} of {fields['entity']} is {fields['value']}."
    return FactCandidate(**fields)


Upsert = Callable[..., UpsertResult]


@pytest.fixture
def upsert(tenant_a: Tenant) -> Upsert:
    def run(tenant: Tenant | None = None, actor: Actor = ACTOR, **overrides: Any) -> UpsertResult:
        with tenant_scope(tenant or tenant_a):
            return fact_upsert(tenant=tenant or tenant_a, candidate=candidate(**overrides), actor=actor)

    return run


@pytest.fixture(autouse=True)
def _fresh_embedder() -> Iterator[None]:
    get_embedder.cache_clear()
    embedding_cache.clear()
    yield
    get_embedder.cache_clear()
    embedding_cache.clear()


def set_config(tenant: Tenant, **values: Any) -> None:
    tenant.settings = {**tenant.settings, **values}
    tenant.save(update_fields=["settings"])

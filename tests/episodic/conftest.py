"""Helpers for episodic tests: build items, append them through the service."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from episodic.models import Episode
from episodic.services import episodes_append
from tenants.models import Tenant
from tenants.scope import tenant_scope

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def item(content: str = "hello", **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"subject": "alice", "session": "s-1", "kind": "message", "role": "user", "content": content}
    base.update(fields)
    return base


def timeline(
    n: int, *, start: datetime = T0, step: timedelta = timedelta(minutes=1), **fields: Any
) -> list[dict[str, Any]]:
    return [item(f"event {i}", occurred_at=(start + i * step).isoformat(), **fields) for i in range(n)]


@pytest.fixture
def append() -> Callable[..., list[Episode]]:
    def _append(tenant: Tenant, items: list[dict[str, Any]], **kwargs: Any) -> list[Episode]:
        with tenant_scope(tenant):
            return episodes_append(tenant=tenant, items=items, **kwargs)

    return _append

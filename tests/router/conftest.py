"""Helpers for router tests: a subject's memories written through the layers' own services."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from consolidation.extractors.base import get_extractor
from episodic.models import Episode
from episodic.services import episodes_append
from episodic.tasks import embed_pending
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate
from tenants.models import Tenant
from tenants.scope import tenant_scope

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def remember(
    tenant: Tenant,
    lines: Sequence[str | tuple[str, str]],
    *,
    subject: str = "alice",
    session: str = "s-1",
    start: datetime = T0,
    step: timedelta = timedelta(minutes=1),
    embed: bool = True,
) -> list[Episode]:
    """Append one message per line (`(role, text)` or text said by the user) and embed them."""
    items: list[dict[str, Any]] = []
    for i, line in enumerate(lines):
        role, text = line if isinstance(line, tuple) else ("user", line)
        items.append(
            {
                "subject": subject,
                "session": session,
                "kind": "message",
                "role": role,
                "content": text,
                "occurred_at": (start + i * step).isoformat(),
                "external_id": f"{session}:{i}",
            }
        )
    with tenant_scope(tenant):
        episodes = episodes_append(tenant=tenant, items=items)
    if embed:
        # The worker's drain: the passages' vectors, then the episodes'.
        embed_pending(tenant=tenant, max_batches=10**6)
    return episodes


def believe(
    tenant: Tenant,
    *,
    attribute: str,
    value: str,
    statement: str,
    subject: str = "alice",
    sources: Sequence[Episode] = (),
    observed_at: datetime | None = None,
    confidence: float = 0.9,
) -> Any:
    with tenant_scope(tenant):
        return fact_upsert(
            tenant=tenant,
            candidate=FactCandidate(
                subject=subject,
                entity=subject,
                attribute=attribute,
                value=value,
                statement=statement,
                category="preferences",
                confidence=confidence,
                source_episode_ids=[e.id for e in sources],
                observed_at=observed_at,
            ),
            actor=Actor(),
        )


@pytest.fixture
def ask(api_a: Any) -> Any:
    def _ask(**body: Any) -> Any:
        body.setdefault("subject", "alice")
        response = api_a.post("/v1/context", body, format="json")
        assert response.status_code == 200, response.content
        return response.json()

    return _ask


@pytest.fixture
def offline_extractor(settings: Any) -> Iterator[None]:
    """The offline rule-based extractor, whatever the settings name."""
    settings.ENGRAM = {**settings.ENGRAM, "EXTRACTOR": "consolidation.extractors.rules.RuleBasedExtractor"}
    get_extractor.cache_clear()
    yield
    get_extractor.cache_clear()

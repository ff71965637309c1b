"""Fixtures for consolidation: sessions and episodes written straight into the tables (the episodic
app's services are exercised by its own tests), and the offline extractor."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from consolidation.extractors.base import get_extractor
from episodic.models import Episode, Session, SessionStatus
from tenants.models import Tenant
from tenants.scope import tenant_scope

NOW = timezone.now()


@pytest.fixture(autouse=True)
def _rule_extractor(settings: Any) -> Iterator[None]:
    settings.ENGRAM = {**settings.ENGRAM, "EXTRACTOR": "consolidation.extractors.rules.RuleBasedExtractor"}
    get_extractor.cache_clear()
    yield
    get_extractor.cache_clear()


def make_session(tenant: Tenant, external_id: str, subject: str = "u1", *, ended: bool = False) -> Session:
    with tenant_scope(tenant):
        session, _ = Session.objects.get_or_create(
            tenant=tenant,
            external_id=external_id,
            defaults={
                "subject": subject,
                "status": SessionStatus.ENDED if ended else SessionStatus.OPEN,
                "ended_at": NOW if ended else None,
            },
        )
        return session


def make_episode(
    tenant: Tenant,
    session: Session,
    content: str,
    *,
    role: str = "user",
    kind: str = "message",
    occurred_at: datetime | None = None,
    entities: list[str] | None = None,
    subject: str | None = None,
) -> Episode:
    with tenant_scope(tenant):
        return Episode.objects.create(
            tenant=tenant,
            session=session,
            subject=subject or session.subject,
            kind=kind,
            role=role,
            content=content,
            occurred_at=occurred_at or NOW - timedelta(minutes=5),
            entities=entities or [],
            content_hash=hashlib.sha256(content.encode()).hexdigest(),
        )


@pytest.fixture
def episode_maker() -> Callable[..., Episode]:
    return make_episode


@pytest.fixture
def session_maker() -> Callable[..., Session]:
    return make_session

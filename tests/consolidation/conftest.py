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
from episodic.passages import passages_create
from tenants.models import Tenant
from tenants.scope import tenant_scope

NOW = timezone.now()


@pytest.fixture(autouse=True)
def _rule_extractor(settings: Any) -> Iterator[None]:
    settings.ENGRAM = {**settings.ENGRAM, "EXTRACTOR": "consolidation.extractors.rules.RuleBasedExtractor"}
    get_extractor.cache_clear()
    yield
    get_extractor.cache_clear()


@pytest.fixture
def parse_reader(settings: Any) -> None:
    """The parse reader on (off by default: config/settings/base.py, ENGRAM["PARSE_READER"])."""
    settings.ENGRAM = {**settings.ENGRAM, "PARSE_READER": True}


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
        episode = Episode.objects.create(
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
        passages_create(tenant=tenant, episodes=[episode])
        return episode


@pytest.fixture
def episode_maker() -> Callable[..., Episode]:
    return make_episode


@pytest.fixture
def session_maker() -> Callable[..., Session]:
    return make_session


class RecordingExtractor:
    """Counts how often each episode is handed to an extractor; extracts with the rules."""

    name = "recording"
    seen: dict[int, int] = {}
    fail_on_call: int | None = None
    calls = 0

    def __init__(self) -> None:
        from consolidation.extractors.rules import RuleBasedExtractor

        self.inner = RuleBasedExtractor()

    def extract(self, *, tenant: Tenant, subject: str, episodes: Any) -> Any:
        type(self).calls += 1
        if type(self).fail_on_call is not None and type(self).calls == type(self).fail_on_call:
            raise RuntimeError("worker died mid-batch")
        for e in episodes:
            type(self).seen[e.id] = type(self).seen.get(e.id, 0) + 1
        return self.inner.extract(tenant=tenant, subject=subject, episodes=episodes)

    def summarise(self, *, tenant: Tenant, subject: str, episodes: Any) -> Any:
        return self.inner.summarise(tenant=tenant, subject=subject, episodes=episodes)


@pytest.fixture
def recording(settings: Any) -> Iterator[type[RecordingExtractor]]:
    RecordingExtractor.seen = {}
    RecordingExtractor.fail_on_call = None
    RecordingExtractor.calls = 0
    settings.ENGRAM = {**settings.ENGRAM, "EXTRACTOR": "tests.consolidation.conftest.RecordingExtractor"}
    get_extractor.cache_clear()
    yield RecordingExtractor
    get_extractor.cache_clear()

"""A small but complete memory for admin and dashboard tests: sessions with outcomes, episodes, facts
merged through fact_upsert (one superseded, one pending review), a consolidation run, router traces
with feedback. Everything goes through the real models and the semantic merge."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.utils import timezone

from consolidation.models import ConsolidationRun, RunStatus, RunTrigger
from episodic.models import Episode, Session, SessionStatus
from router.models import ContextFeedback, ContextTrace
from semantic.models import ActorType, Fact
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.services import membership_add

OPERATOR_APPS = (
    "tenants",
    "episodic",
    "semantic",
    "procedural",
    "router",
    "consolidation",
    "privacy",
    "django_celery_beat",
)


def make_operator(username: str, *tenants: Tenant, password: str = "pw-operator-1") -> object:  # noqa: S107
    """A staff user (not superuser) with the model permissions of every Engram app, operator of `tenants`."""
    user = get_user_model().objects.create_user(username, password=password, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label__in=OPERATOR_APPS))
    for tenant in tenants:
        membership_add(tenant=tenant, user=user)
    return user


@dataclass
class Memory:
    tenant: Tenant
    subject: str
    sessions: list[Session] = field(default_factory=list)
    episodes: list[Episode] = field(default_factory=list)
    old_fact: Fact | None = None
    new_fact: Fact | None = None
    pending_fact: Fact | None = None
    supersession_id: int | None = None
    traces: list[ContextTrace] = field(default_factory=list)


def _episode(tenant: Tenant, session: Session, content: str, at: datetime, role: str = "user") -> Episode:
    return Episode.objects.create(
        tenant=tenant,
        session=session,
        subject=session.subject,
        kind="message",
        role=role,
        content=content,
        occurred_at=at,
        content_hash=hashlib.sha256(content.encode()).hexdigest(),
    )


def build_memory(tenant: Tenant, subject: str = "user-1", prefix: str = "") -> Memory:
    """Two ended sessions (success, failure) and an open one; a city that moved (Paris -> Berlin, so one
    supersession to revert); an employer waiting for review; one run; two traces, one with feedback."""
    from semantic.models import FactChange, FactChangeKind

    now = timezone.now()
    memory = Memory(tenant=tenant, subject=subject)
    actor = Actor(type=ActorType.CONSOLIDATION, id="test-run")
    with tenant_scope(tenant):
        for i, (status, outcome) in enumerate(
            [(SessionStatus.ENDED, "success"), (SessionStatus.ENDED, "failure"), (SessionStatus.OPEN, None)]
        ):
            started = now - timedelta(days=6 - 2 * i)
            session = Session.objects.create(
                tenant=tenant,
                external_id=f"{prefix}conv-{i + 1}",
                subject=subject,
                status=status,
                outcome=outcome,
                started_at=started,
                ended_at=started + timedelta(minutes=20) if status == SessionStatus.ENDED else None,
                last_event_at=started + timedelta(minutes=10),
                episode_count=2,
            )
            memory.sessions.append(session)
        s1, s2, s3 = memory.sessions
        memory.episodes = [
            _episode(tenant, s1, "I live in Paris these days.", s1.started_at + timedelta(minutes=1)),
            _episode(tenant, s1, "Noted, Paris it is.", s1.started_at + timedelta(minutes=2), role="assistant"),
            _episode(tenant, s2, "I moved to Berlin last month.", s2.started_at + timedelta(minutes=1)),
            _episode(tenant, s2, "Moving is hard; good luck.", s2.started_at + timedelta(minutes=2), "assistant"),
            _episode(tenant, s3, "I think I work for Acme Corp now.", s3.started_at + timedelta(minutes=1)),
            _episode(tenant, s3, "Great, tell me more.", s3.started_at + timedelta(minutes=2), role="assistant"),
        ]
        e = memory.episodes

        def upsert(attribute: str, value: str, confidence: float, episode: Episode) -> Fact:
            return fact_upsert(
                tenant=tenant,
                candidate=FactCandidate(
                    subject=subject,
                    entity=subject,
                    attribute=attribute,
                    value=value,
                    statement=f"{subject} {attribute.replace('_', ' ')} is {value}.",
                    category="contact_info" if attribute == "city" else "business_context",
                    confidence=confidence,
                    source_episode_ids=[episode.pk],
                    observed_at=episode.occurred_at,
                ),
                actor=actor,
            ).fact

        memory.old_fact = upsert("city", "Paris", 0.9, e[0])
        memory.new_fact = upsert("city", "Berlin", 0.9, e[2])
        memory.pending_fact = upsert("employer", "Acme Corp", 0.3, e[4])
        memory.old_fact.refresh_from_db()
        memory.supersession_id = (
            FactChange.objects.for_tenant(tenant)
            .filter(fact=memory.old_fact, kind=FactChangeKind.SUPERSEDED)
            .values_list("id", flat=True)
            .get()
        )
        ConsolidationRun.objects.create(
            tenant=tenant,
            trigger=RunTrigger.SESSION_ENDED,
            reason=f"session {s2.external_id} ended",
            subject=subject,
            session_external_id=s2.external_id,
            status=RunStatus.SUCCEEDED,
            episodes_read=4,
            facts_created=2,
            facts_superseded=1,
            created_at=now - timedelta(days=1),
        )
        for i, session in enumerate((s1, s2)):
            trace = ContextTrace.objects.create(
                tenant=tenant,
                subject=subject,
                session=session.external_id,
                query="where do I live?",
                policy="heuristic",
                offered_ids=["fact:a", "fact:b", "episode:1", "episode:2"],
                total_tokens=120,
            )
            memory.traces.append(trace)
            if i == 0:
                ContextFeedback.objects.create(
                    tenant=tenant,
                    trace=trace,
                    subject=subject,
                    session=session.external_id,
                    used_item_ids=["fact:a"],
                    offered_count=4,
                    used_count=1,
                    outcome="success",
                )
    return memory


def build_history(tenant: Tenant, subjects: tuple[str, ...] = ("alice", "dan", "erin"), weeks: int = 8) -> int:
    """Weeks of plausible activity for charts: sessions with outcomes and episodes, consolidation runs
    by every trigger, traces with feedback. Deterministic. Returns the number of episodes written."""
    import random

    rng = random.Random(8)  # noqa: S311 - test data
    now = timezone.now()
    outcomes = ["success", "success", "success", "failure", "unknown"]
    triggers = [RunTrigger.SESSION_ENDED, RunTrigger.SESSION_ENDED, RunTrigger.ENTITY_THRESHOLD, RunTrigger.SWEEP]
    episodes: list[Episode] = []
    with tenant_scope(tenant):
        for week in range(weeks):
            for subject in subjects:
                for n in range(1 + (week + len(subject)) % 3):
                    started = now - timedelta(days=7 * (weeks - 1 - week) + rng.randint(0, 6), hours=rng.randint(0, 12))
                    started = min(started, now - timedelta(hours=1))
                    count = rng.randint(3, 9)
                    session = Session.objects.create(
                        tenant=tenant,
                        external_id=f"h-{subject}-{week}-{n}",
                        subject=subject,
                        status=SessionStatus.ENDED,
                        outcome=rng.choice(outcomes),
                        started_at=started,
                        ended_at=started + timedelta(minutes=count * 2),
                        last_event_at=started + timedelta(minutes=count * 2),
                        episode_count=count,
                    )
                    for k in range(count):
                        text = f"{subject} message {k} in week {week}"
                        episodes.append(
                            Episode(
                                tenant=tenant,
                                session=session,
                                subject=subject,
                                kind="message",
                                role="user" if k % 2 == 0 else "assistant",
                                content=text,
                                occurred_at=started + timedelta(minutes=2 * k),
                                created_at=started + timedelta(minutes=2 * k),
                                content_hash=hashlib.sha256(text.encode()).hexdigest(),
                            )
                        )
                    run_at = session.ended_at + timedelta(minutes=1)
                    ConsolidationRun.objects.create(
                        tenant=tenant,
                        trigger=rng.choice(triggers),
                        subject=subject,
                        session_external_id=session.external_id,
                        status=RunStatus.SUCCEEDED,
                        episodes_read=count,
                        facts_created=rng.randint(0, 3),
                        facts_confirmed=rng.randint(0, 2),
                        facts_superseded=rng.randint(0, 1),
                        created_at=run_at,
                    )
                    trace = ContextTrace.objects.create(
                        tenant=tenant,
                        subject=subject,
                        session=session.external_id,
                        query="what do you know about me?",
                        policy="heuristic",
                        offered_ids=[f"fact:{i}" for i in range(6)],
                        total_tokens=300,
                        created_at=started,
                    )
                    used = rng.randint(1, 6)
                    ContextFeedback.objects.create(
                        tenant=tenant,
                        trace=trace,
                        subject=subject,
                        session=session.external_id,
                        used_item_ids=[f"fact:{i}" for i in range(used)],
                        offered_count=6,
                        used_count=used,
                        outcome=session.outcome or "unknown",
                        created_at=started + timedelta(minutes=5),
                    )
        Episode.objects.bulk_create(episodes, batch_size=500)
    return len(episodes)


_CSRF = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]*(")')


def page_body(response: Any) -> str:
    """A page's HTML without its CSRF tokens: 64 random letters and digits spell a short name now and
    then ("...LbobF..."), which a test that a name is absent would take for a leak."""
    return _CSRF.sub(r"\1\2", response.content.decode())

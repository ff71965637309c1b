"""Factories for procedural memory, and a fast builder of ended sessions for discovery tests."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import factory
from django.utils import timezone

from episodic.models import Episode, Outcome, Session, SessionStatus
from procedural.confidence import confidence_for
from procedural.models import Procedure, ProcedureSource, ProcedureStatus
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tests.factories.tenants import TenantOwnedFactory


class ProcedureFactory(TenantOwnedFactory):
    """A stored procedure row as-is (no embedding); behaviour tests create through the service."""

    class Meta:
        model = Procedure

    name = factory.Sequence(lambda n: f"procedure {n}")
    behaviour = "Do the careful thing."
    trigger = factory.LazyFunction(lambda: {"keywords": ["deploy"]})
    source = ProcedureSource.INSTRUCTION
    status = ProcedureStatus.ACTIVE
    confidence = factory.LazyAttribute(lambda o: confidence_for(source=o.source, successes=0, failures=0))


@dataclass
class Step:
    kind: str
    role: str = ""
    payload: dict[str, Any] = field(default_factory=dict)
    content: str = ""


def tool_call(name: str) -> Step:
    return Step("tool_call", "assistant", {"tool": name}, f"calling {name}")


def tool_result(name: str, status: int | str) -> Step:
    return Step("tool_result", "tool", {"tool": name, "status": status}, f"{name} answered {status}")


def decision(action: str) -> Step:
    return Step("decision", "assistant", {"action": action}, f"decided to {action}")


def message(role: str, text: str = "hello") -> Step:
    return Step("message", role, {}, text)


def _hash(step: Step) -> str:
    digest = hashlib.sha256(step.content.encode())
    if step.payload:
        digest.update(json.dumps(step.payload, sort_keys=True).encode())
    return digest.hexdigest()


def make_ended_sessions(
    *,
    tenant: Tenant,
    sessions: Sequence[tuple[str, str | None, Sequence[Step]]],
    ended_at: datetime | None = None,
    outcome_signal: float | None = None,
) -> list[Session]:
    """Bulk-create ended sessions `(external_id, outcome, steps)` with their episodes in order.
    An outcome of None leaves the session without a label."""
    ended_at = ended_at or timezone.now() - timedelta(hours=1)
    with tenant_scope(tenant):
        rows = Session.objects.bulk_create(
            [
                Session(
                    tenant=tenant,
                    external_id=external_id,
                    subject="user-1",
                    status=SessionStatus.ENDED,
                    started_at=ended_at - timedelta(minutes=30),
                    ended_at=ended_at,
                    outcome=outcome,
                    outcome_signal=outcome_signal,
                    episode_count=len(steps),
                )
                for external_id, outcome, steps in sessions
            ]
        )
        episodes = []
        for session, (_, _, steps) in zip(rows, sessions, strict=True):
            start = session.started_at
            for index, step in enumerate(steps):
                episodes.append(
                    Episode(
                        tenant=tenant,
                        session=session,
                        subject=session.subject,
                        kind=step.kind,
                        role=step.role,
                        content=step.content,
                        payload=step.payload,
                        occurred_at=start + timedelta(seconds=index),
                        content_hash=_hash(step),
                    )
                )
        Episode.objects.bulk_create(episodes, batch_size=2_000)
    return rows


SUCCESS = Outcome.SUCCESS
FAILURE = Outcome.FAILURE

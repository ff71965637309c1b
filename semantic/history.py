"""The history of facts: every change is a FactChange row with its actor, reason and source episodes.

A merge computes its changes first, as typed ChangeDrafts, and logs them once the facts are written."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime

from episodic.models import Episode
from semantic.models import Fact, FactChange, FactSource
from semantic.types import Actor
from tenants.models import Tenant


@dataclasses.dataclass(frozen=True)
class ChangeDraft:
    """One change to log about `fact`, decided by the merge before the facts are saved."""

    fact: Fact
    kind: str
    reason: str = ""
    old_value: str | None = None
    new_value: str | None = None
    old_status: str | None = None
    new_status: str | None = None
    old_confidence: float | None = None
    new_confidence: float | None = None
    related_fact: Fact | None = None
    observed_at: datetime | None = None

    def log(self, *, tenant: Tenant, actor: Actor, source_episode_ids: Iterable[int], at: datetime) -> FactChange:
        return change_log(
            tenant=tenant,
            actor=actor,
            source_episode_ids=source_episode_ids,
            at=at,
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
        )


def change_log(
    *,
    tenant: Tenant,
    fact: Fact,
    kind: str,
    actor: Actor,
    reason: str = "",
    old_value: str | None = None,
    new_value: str | None = None,
    old_status: str | None = None,
    new_status: str | None = None,
    old_confidence: float | None = None,
    new_confidence: float | None = None,
    related_fact: Fact | None = None,
    source_episode_ids: Iterable[int] = (),
    observed_at: datetime | None = None,
    at: datetime | None = None,
) -> FactChange:
    change = FactChange.record(
        fact=fact,
        kind=kind,
        actor=actor,
        reason=reason,
        source_episode_ids=source_episode_ids,
        at=at,
        old_value=old_value,
        new_value=new_value,
        old_status=old_status,
        new_status=new_status,
        old_confidence=old_confidence,
        new_confidence=new_confidence,
        related_fact=related_fact,
        observed_at=observed_at,
    )
    change.save(force_insert=True)
    return change


def sources_add(*, tenant: Tenant, fact: Fact, episodes: Iterable[Episode]) -> None:
    rows = [FactSource(tenant=tenant, fact=fact, episode=e) for e in episodes]
    if rows:
        FactSource.objects.bulk_create(rows, ignore_conflicts=True)

"""The timeline of a single-valued attribute: its values as contiguous validity intervals, the last one
open. A value is placed at the time it was observed, so the latest observation wins whatever the order
of arrival; nothing is deleted, a replaced value is closed."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

from django.db.models import Min

from semantic.history import ChangeDraft, sources_add
from semantic.models import Cardinality, Fact, FactChange, FactChangeKind, FactStatus
from semantic.types import Actor, UpsertAction
from tenants.models import Tenant

TIMELINE = (FactStatus.ACTIVE, FactStatus.SUPERSEDED)


def timeline_of(
    tenant: Tenant, subject: str, entity: str, attribute: str, exclude: uuid.UUID | None = None
) -> list[Fact]:
    """The values of a single-valued attribute in one subject's memory (its slot, semantic.services)
    through time: contiguous intervals, the last one open."""
    qs = Fact.objects.filter(
        subject=subject, entity=entity, attribute=attribute, cardinality=Cardinality.SINGLE, status__in=TIMELINE
    )
    if exclude is not None:
        qs = qs.exclude(id=exclude)
    return list(qs.order_by("valid_from", "recorded_at"))


def timeline_split(timeline: Sequence[Fact], at: datetime) -> tuple[Fact | None, Fact | None]:
    """The value that held at `at` (the last with valid_from <= at) and the first one after it."""
    prev: Fact | None = None
    nxt: Fact | None = None
    for f in timeline:
        if f.valid_from <= at:
            prev = f
        elif nxt is None:
            nxt = f
    return prev, nxt


def covers(fact: Fact, at: datetime) -> bool:
    return fact.valid_from <= at and (fact.valid_to is None or at < fact.valid_to)


def seen_again(tenant: Tenant, prev: Fact, after: datetime) -> datetime | None:
    """The first observation of prev's value after `after` and before prev's interval ends: a value
    observed at `after` only holds until then."""
    qs = FactChange.objects.filter(
        fact__tenant_id=tenant.id,
        fact__subject=prev.subject,
        fact__entity=prev.entity,
        fact__attribute=prev.attribute,
        fact__value_key=prev.value_key,
        fact__status__in=TIMELINE,
        kind__in=(FactChangeKind.CREATED, FactChangeKind.CONFIRMED, FactChangeKind.REVERTED),
        observed_at__gt=after,
    )
    if prev.valid_to is not None:
        qs = qs.filter(observed_at__lt=prev.valid_to)
    first: datetime | None = qs.aggregate(first=Min("observed_at"))["first"]
    return first


def close(prev: Fact, *, at: datetime, by: Fact, now: datetime) -> str:
    old_status = prev.status
    prev.status = FactStatus.SUPERSEDED
    prev.valid_to = at
    prev.superseded_by_id = by.id
    prev.updated_at = now
    prev.save(update_fields=["status", "valid_to", "superseded_by", "updated_at"])
    return old_status


def place_single(
    *,
    tenant: Tenant,
    fact: Fact,
    timeline: Sequence[Fact],
    actor: Actor,
    episode_ids: Sequence[int],
    now: datetime,
) -> tuple[UpsertAction, Fact | None, list[ChangeDraft]]:
    """Put a new value of a single-valued attribute into its timeline at the time it was observed, so
    that at every instant the latest observation wins whatever the order of arrival:
    - after every known value: it becomes active and closes the one before;
    - before a known value: it is stored already superseded, between its neighbours;
    - inside the interval of a value that was observed again later: that interval is split, and the
      new value holds between the two observations.
    `fact` is unsaved (a candidate) or pending (an approved review); its valid_from is set. Returns
    the changes to log (after the caller's own entry for `fact`)."""
    at = fact.valid_from
    prev, nxt = timeline_split(timeline, at)
    resume = seen_again(tenant, prev, at) if prev is not None and covers(prev, at) else None
    changes: list[ChangeDraft] = []

    if resume is not None and prev is not None:
        tail = prev.copy(valid_from=resume, recorded_at=now, updated_at=now)
        old_status = close(prev, at=at, by=fact, now=now)
        fact.status = FactStatus.SUPERSEDED
        fact.valid_to = resume
        fact.superseded_by = tail
        fact.save()
        tail.save()
        sources_add(tenant=tenant, fact=tail, episodes=list(prev.source_episodes.all()))
        changes.append(
            ChangeDraft(
                fact=tail,
                kind=FactChangeKind.CREATED,
                reason=f"split of fact {prev.id}: its value was observed again at {resume.isoformat()}.",
                new_value=tail.value,
                new_status=tail.status,
                new_confidence=tail.confidence,
                related_fact=prev,
                observed_at=resume,
            )
        )
        changes.append(
            _superseded(
                prev,
                by=fact,
                old_status=old_status,
                reason=f"another value was observed at {at.isoformat()}, before this one was seen again.",
            )
        )
        action: UpsertAction = "superseded"
        previous: Fact | None = prev if old_status == FactStatus.ACTIVE else None
    elif nxt is None:
        fact.status = FactStatus.ACTIVE
        fact.valid_to = None
        fact.superseded_by = None
        previous = None
        action = "created"
        if prev is not None and prev.status == FactStatus.ACTIVE:
            # Close the loser before the winner is written: at most one active value at any instant.
            old_status = close(prev, at=at, by=fact, now=now)
            changes.append(
                _superseded(
                    prev, by=fact, old_status=old_status, reason=f"a newer value was observed at {at.isoformat()}."
                )
            )
            action, previous = "superseded", prev
        fact.save()
    else:
        # Observed before the value that followed it: history, not the present.
        fact.status = FactStatus.SUPERSEDED
        fact.valid_to = nxt.valid_from
        fact.superseded_by = nxt
        fact.save()
        if prev is not None and (prev.valid_to is None or prev.valid_to > at):
            prev.valid_to = at
            prev.superseded_by_id = fact.id
            prev.updated_at = now
            prev.save(update_fields=["valid_to", "superseded_by", "updated_at"])
            changes.append(
                _superseded(
                    prev,
                    by=fact,
                    old_status=prev.status,
                    reason=f"an out-of-order value observed at {at.isoformat()} came in between.",
                )
            )
        action, previous = "superseded", None

    if fact.status == FactStatus.SUPERSEDED:
        winner = fact.superseded_by
        assert winner is not None
        changes.append(
            ChangeDraft(
                fact=fact,
                kind=FactChangeKind.SUPERSEDED,
                reason=(
                    f"observed at {at.isoformat()}, before the value observed at {winner.valid_from.isoformat()};"
                    " stored as history."
                ),
                old_value=fact.value,
                new_value=winner.value,
                new_status=FactStatus.SUPERSEDED,
                related_fact=winner,
            )
        )
    return action, previous, changes


def _superseded(prev: Fact, *, by: Fact, old_status: str, reason: str) -> ChangeDraft:
    """The entry of `prev` closed by the value of `by`."""
    return ChangeDraft(
        fact=prev,
        kind=FactChangeKind.SUPERSEDED,
        reason=reason,
        old_value=prev.value,
        new_value=by.value,
        old_status=old_status,
        new_status=prev.status,
        related_fact=by,
    )

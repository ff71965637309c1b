"""Writes to semantic memory.

Every fact enters through `fact_upsert`, the one merge shared by the API, consolidation and operators:
duplicates confirm, a single-valued attribute keeps one value at a time (the value observed later
wins, whatever the order of arrival), multi-valued attributes accumulate, and low-confidence facts
wait for review. Nothing is deleted: a replaced value is closed, and every change is logged as a
FactChange with its actor, reason and source episodes.

Writers of one (tenant, entity, attribute) are serialised by a transaction-scoped row lock (tenants.locks); the
partial unique constraints on Fact are the last line behind it.
"""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F, Min
from django.utils import timezone

from core.embedding import embedding_cache
from core.errors import Conflict, NotFound, ValidationProblem
from episodic.models import Episode
from semantic.models import (
    ActorType,
    Cardinality,
    Fact,
    FactCategory,
    FactChange,
    FactChangeKind,
    FactOrigin,
    FactSource,
    FactStatus,
)
from semantic.normalise import (
    ATTRIBUTE_MAX,
    default_cardinality,
    normalise_attribute,
    normalise_entity,
    value_key,
)
from semantic.types import Actor, FactCandidate, UpsertAction, UpsertResult
from tenants.locks import tenant_xact_lock
from tenants.models import Tenant

LIVE = (FactStatus.ACTIVE, FactStatus.PENDING_REVIEW)
TIMELINE = (FactStatus.ACTIVE, FactStatus.SUPERSEDED)
# An explicit confirmation (operator or API) halves the remaining doubt.
CONFIRM_WEIGHT = 0.5
# A value this long is a sentence, not the name of another entity.
OBJECT_ENTITY_MAX = 120


def allowed_categories(tenant: Tenant) -> set[str]:
    return set(FactCategory.values) | {c for c in tenant.config.extra_categories if isinstance(c, str)}


def _combine(old: float, new: float) -> float:
    """Independent evidence: noisy-OR. Never lowers confidence, never exceeds 1."""
    return min(1.0, max(old, 1.0 - (1.0 - old) * (1.0 - new)))


# --- embeddings --------------------------------------------------------------------------------------


def embed_statements(texts: Sequence[str]) -> list[list[float]]:
    return embedding_cache.embed(texts)


# --- validation --------------------------------------------------------------------------------------


@dataclasses.dataclass
class _Prepared:
    subject: str
    entity: str
    attribute: str
    value: str
    value_key: str
    statement: str
    category: str
    confidence: float
    cardinality: str | None
    origin: str
    object_entity: str | None
    episodes: list[Episode]
    observed_at: datetime

    @property
    def episode_ids(self) -> list[int]:
        return [e.id for e in self.episodes]


def _prepare(tenant: Tenant, candidate: FactCandidate) -> _Prepared:
    errors: list[dict[str, str]] = []

    def bad(pointer: str, detail: str) -> None:
        errors.append({"pointer": pointer, "detail": detail})

    max_chars = settings.ENGRAM["MAX_TEXT_CHARS"]
    entity = normalise_entity(candidate.entity or "")
    if not entity:
        bad("/entity", "entity must not be empty.")
    attribute = normalise_attribute(candidate.attribute or "")
    if not attribute:
        bad("/attribute", "attribute must contain at least one letter or digit.")
    elif len(candidate.attribute) > ATTRIBUTE_MAX * 2:
        bad("/attribute", f"attribute must be at most {ATTRIBUTE_MAX} characters.")
    value = (candidate.value or "").strip()
    if not value:
        bad("/value", "value must not be empty.")
    elif len(value) > max_chars:
        bad("/value", f"value must be at most {max_chars} characters.")
    statement = " ".join((candidate.statement or "").split())
    if not statement:
        bad("/statement", "statement must not be empty.")
    elif len(statement) > max_chars:
        bad("/statement", f"statement must be at most {max_chars} characters.")
    if candidate.category not in allowed_categories(tenant):
        bad("/category", f"unknown category {candidate.category!r}; allowed: {sorted(allowed_categories(tenant))}.")
    confidence = candidate.confidence
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not math.isfinite(confidence):
        bad("/confidence", "confidence must be a number between 0 and 1.")
        confidence = 0.0
    elif not 0.0 <= confidence <= 1.0:
        bad("/confidence", "confidence must be between 0 and 1.")
    if candidate.cardinality is not None and candidate.cardinality not in Cardinality.values:
        bad("/cardinality", f"cardinality must be one of {Cardinality.values}.")
    if candidate.origin not in FactOrigin.values:
        bad("/origin", f"origin must be one of {FactOrigin.values}.")
    subject = (candidate.subject or "").strip()
    if len(subject) > 255:
        bad("/subject", "subject must be at most 255 characters.")
    object_entity = normalise_entity(candidate.object_entity) if candidate.object_entity else None

    episodes: list[Episode] = []
    ids = list(candidate.source_episode_ids or [])
    if ids:
        found = {
            e.id: e
            for e in Episode.objects.for_tenant(tenant)
            .filter(id__in=[i for i in ids if isinstance(i, int)])
            .only("id", "subject", "occurred_at")
        }
        subjects = {e.subject for e in found.values()}
        if not subject and len(subjects) == 1:
            subject = subjects.pop()
        for index, episode_id in enumerate(ids):
            episode = found.get(episode_id) if isinstance(episode_id, int) else None
            if episode is None:
                # Another tenant's episode is reported exactly like a missing one.
                bad(f"/source_episode_ids/{index}", f"episode {episode_id} does not exist.")
            elif episode.subject != subject:
                bad(f"/source_episode_ids/{index}", f"episode {episode_id} is about another subject.")
            elif episode not in episodes:
                episodes.append(episode)
    if errors:
        raise ValidationProblem("; ".join(f"{e['pointer']}: {e['detail']}" for e in errors[:5]), errors=errors)

    observed_at = candidate.observed_at
    if observed_at is not None and timezone.is_naive(observed_at):
        observed_at = timezone.make_aware(observed_at, timezone.get_current_timezone())
    if observed_at is None:
        observed_at = max((e.occurred_at for e in episodes), default=None) or timezone.now()
    return _Prepared(
        subject=subject,
        entity=entity,
        attribute=attribute,
        value=value,
        value_key=value_key(value),
        statement=statement,
        category=candidate.category,
        confidence=float(confidence),
        cardinality=candidate.cardinality,
        origin=candidate.origin,
        object_entity=object_entity,
        episodes=episodes,
        observed_at=observed_at,
    )


# --- locking and logging -----------------------------------------------------------------------------


def _lock(tenant: Tenant, entity: str, attribute: str) -> None:
    """Serialise every writer of one (tenant, entity, attribute) until the transaction ends."""
    tenant_xact_lock(tenant.id, "fact", entity, attribute)


def _log(
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
    return FactChange.objects.create(
        tenant=tenant,
        fact=fact,
        kind=kind,
        old_value=old_value,
        new_value=new_value,
        old_status=old_status,
        new_status=new_status,
        old_confidence=old_confidence,
        new_confidence=new_confidence,
        related_fact=related_fact,
        reason=" ".join(p for p in (reason, actor.reason) if p),
        actor_type=actor.type,
        actor_id=actor.id,
        source_episode_ids=sorted(set(source_episode_ids)),
        observed_at=observed_at,
        created_at=at or timezone.now(),
    )


def _add_sources(tenant: Tenant, fact: Fact, episodes: Iterable[Episode]) -> None:
    rows = [FactSource(tenant=tenant, fact=fact, episode=e) for e in episodes]
    if rows:
        FactSource.objects.bulk_create(rows, ignore_conflicts=True)


def _get_for_update(tenant: Tenant, fact_id: uuid.UUID | str) -> Fact:
    try:
        key = fact_id if isinstance(fact_id, uuid.UUID) else uuid.UUID(str(fact_id))
    except ValueError:
        raise NotFound(f"Fact {fact_id} does not exist.") from None
    fact = Fact.objects.for_tenant(tenant).select_for_update().filter(id=key).first()
    if fact is None:
        raise NotFound(f"Fact {fact_id} does not exist.")
    return fact


def _lock_fact(tenant: Tenant, fact_id: uuid.UUID | str) -> Fact:
    """Lock the fact's (entity, attribute) like an upsert does, then the row itself."""
    fact = _get_for_update(tenant, fact_id)
    _lock(tenant, fact.entity, fact.attribute)
    fact.refresh_from_db()
    return fact


# --- the merge ---------------------------------------------------------------------------------------


def _resolve_cardinality(c: _Prepared, live: Sequence[Fact]) -> str:
    stored = {f.cardinality for f in live}
    if c.cardinality is not None:
        if stored and stored != {c.cardinality}:
            raise ValidationProblem.at(
                "/cardinality",
                f"{c.entity}.{c.attribute} is stored as {sorted(stored)[0]}-valued; "
                "retract its live facts before changing the cardinality.",
            )
        return c.cardinality
    if stored:
        return sorted(stored)[0]
    return default_cardinality(c.attribute, c.category)


def _object_entity(tenant: Tenant, c: _Prepared) -> str | None:
    if c.object_entity:
        return c.object_entity
    if len(c.value) > OBJECT_ENTITY_MAX:
        return None
    name = normalise_entity(c.value)
    if not name or name == c.entity or name.replace(".", "").isdigit():
        return None
    dictionary = {normalise_entity(e) for e in tenant.config.entity_dictionary if isinstance(e, str)}
    if name in dictionary or Fact.objects.for_tenant(tenant).filter(entity=name).exists():
        return name
    return None


def _near_duplicate(pool: Sequence[Fact], embedding: Sequence[float], threshold: float) -> tuple[Fact, float] | None:
    rows = [f for f in pool if f.embedding is not None]
    if not rows:
        return None
    matrix = np.asarray([np.asarray(f.embedding, dtype=np.float32) for f in rows])
    sims = matrix @ np.asarray(embedding, dtype=np.float32)
    best = int(np.argmax(sims))
    if float(sims[best]) >= threshold:
        return rows[best], float(sims[best])
    return None


def _confirm(tenant: Tenant, fact: Fact, c: _Prepared, actor: Actor, reason: str, now: datetime) -> UpsertResult:
    old_confidence = fact.confidence
    fact.confidence = _combine(fact.confidence, c.confidence)
    fact.last_confirmed_at = now
    fact.confirmation_count += 1
    fact.updated_at = now
    fields = ["confidence", "last_confirmed_at", "confirmation_count", "updated_at", "valid_from"]
    if not fact.subject and c.subject:
        fact.subject = c.subject
        fields.append("subject")
    fact.save(update_fields=fields)
    _add_sources(tenant, fact, c.episodes)
    _log(
        tenant=tenant,
        fact=fact,
        kind=FactChangeKind.CONFIRMED,
        actor=actor,
        reason=reason,
        old_value=fact.value,
        new_value=c.value,
        old_status=fact.status,
        new_status=fact.status,
        old_confidence=old_confidence,
        new_confidence=fact.confidence,
        source_episode_ids=c.episode_ids,
        observed_at=c.observed_at,
        at=now,
    )
    return UpsertResult(fact=fact, action="confirmed", previous=None)


def _timeline(tenant: Tenant, entity: str, attribute: str, exclude: uuid.UUID | None = None) -> list[Fact]:
    """The values of a single-valued attribute through time: contiguous intervals, the last one open."""
    qs = Fact.objects.for_tenant(tenant).filter(
        entity=entity, attribute=attribute, cardinality=Cardinality.SINGLE, status__in=TIMELINE
    )
    if exclude is not None:
        qs = qs.exclude(id=exclude)
    return list(qs.order_by("valid_from", "recorded_at"))


def _split(timeline: Sequence[Fact], at: datetime) -> tuple[Fact | None, Fact | None]:
    """The value that held at `at` (the last with valid_from <= at) and the first one after it."""
    prev: Fact | None = None
    nxt: Fact | None = None
    for f in timeline:
        if f.valid_from <= at:
            prev = f
        elif nxt is None:
            nxt = f
    return prev, nxt


def _covers(fact: Fact, at: datetime) -> bool:
    return fact.valid_from <= at and (fact.valid_to is None or at < fact.valid_to)


def _seen_again(tenant: Tenant, prev: Fact, after: datetime) -> datetime | None:
    """The first observation of prev's value after `after` and before prev's interval ends: a value
    observed at `after` only holds until then."""
    qs = FactChange.objects.for_tenant(tenant).filter(
        fact__tenant_id=tenant.id,
        fact__entity=prev.entity,
        fact__attribute=prev.attribute,
        fact__value_key=prev.value_key,
        fact__status__in=TIMELINE,
        kind__in=(FactChangeKind.CREATED, FactChangeKind.CONFIRMED),
        observed_at__gt=after,
    )
    if prev.valid_to is not None:
        qs = qs.filter(observed_at__lt=prev.valid_to)
    first: datetime | None = qs.aggregate(first=Min("observed_at"))["first"]
    return first


def _close(prev: Fact, *, at: datetime, by: Fact, now: datetime) -> str:
    old_status = prev.status
    prev.status = FactStatus.SUPERSEDED
    prev.valid_to = at
    prev.superseded_by_id = by.id
    prev.updated_at = now
    prev.save(update_fields=["status", "valid_to", "superseded_by", "updated_at"])
    return old_status


def _place_single(
    *,
    tenant: Tenant,
    fact: Fact,
    timeline: Sequence[Fact],
    actor: Actor,
    episode_ids: Sequence[int],
    now: datetime,
) -> tuple[UpsertAction, Fact | None, list[dict[str, Any]]]:
    """Put a new value of a single-valued attribute into its timeline at the time it was observed, so
    that at every instant the latest observation wins whatever the order of arrival:
    - after every known value: it becomes active and closes the one before;
    - before a known value: it is stored already superseded, between its neighbours;
    - inside the interval of a value that was observed again later: that interval is split, and the
      new value holds between the two observations.
    `fact` is unsaved (a candidate) or pending (an approved review); its valid_from is set. Returns
    the changes to log (after the caller's own entry for `fact`) as keyword arguments of `_log`."""
    at = fact.valid_from
    prev, nxt = _split(timeline, at)
    resume = _seen_again(tenant, prev, at) if prev is not None and _covers(prev, at) else None
    changes: list[dict[str, Any]] = []

    if resume is not None and prev is not None:
        tail = Fact(
            tenant=tenant,
            subject=prev.subject,
            entity=prev.entity,
            attribute=prev.attribute,
            value=prev.value,
            value_key=prev.value_key,
            statement=prev.statement,
            category=prev.category,
            cardinality=prev.cardinality,
            confidence=prev.confidence,
            status=prev.status,
            valid_from=resume,
            valid_to=prev.valid_to,
            recorded_at=now,
            last_confirmed_at=prev.last_confirmed_at,
            origin=prev.origin,
            superseded_by_id=prev.superseded_by_id,
            object_entity=prev.object_entity,
            embedding=prev.embedding,
            updated_at=now,
        )
        old_status = _close(prev, at=at, by=fact, now=now)
        fact.status = FactStatus.SUPERSEDED
        fact.valid_to = resume
        fact.superseded_by = tail
        fact.save()
        tail.save()
        _add_sources(tenant, tail, list(prev.source_episodes.all()))
        changes.append(
            {
                "fact": tail,
                "kind": FactChangeKind.CREATED,
                "reason": f"split of fact {prev.id}: its value was observed again at {resume.isoformat()}.",
                "new_value": tail.value,
                "new_status": tail.status,
                "new_confidence": tail.confidence,
                "related_fact": prev,
                "observed_at": resume,
            }
        )
        changes.append(
            {
                "fact": prev,
                "kind": FactChangeKind.SUPERSEDED,
                "reason": f"another value was observed at {at.isoformat()}, before this one was seen again.",
                "old_value": prev.value,
                "new_value": fact.value,
                "old_status": old_status,
                "new_status": prev.status,
                "related_fact": fact,
            }
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
            old_status = _close(prev, at=at, by=fact, now=now)
            changes.append(
                {
                    "fact": prev,
                    "kind": FactChangeKind.SUPERSEDED,
                    "reason": f"a newer value was observed at {at.isoformat()}.",
                    "old_value": prev.value,
                    "new_value": fact.value,
                    "old_status": old_status,
                    "new_status": prev.status,
                    "related_fact": fact,
                }
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
                {
                    "fact": prev,
                    "kind": FactChangeKind.SUPERSEDED,
                    "reason": f"an out-of-order value observed at {at.isoformat()} came in between.",
                    "old_value": prev.value,
                    "new_value": fact.value,
                    "old_status": prev.status,
                    "new_status": prev.status,
                    "related_fact": fact,
                }
            )
        action, previous = "superseded", None

    if fact.status == FactStatus.SUPERSEDED:
        winner = fact.superseded_by
        assert winner is not None
        changes.append(
            {
                "fact": fact,
                "kind": FactChangeKind.SUPERSEDED,
                "reason": (
                    f"observed at {at.isoformat()}, before the value observed at {winner.valid_from.isoformat()};"
                    " stored as history."
                ),
                "old_value": fact.value,
                "new_value": winner.value,
                "new_status": FactStatus.SUPERSEDED,
                "related_fact": winner,
            }
        )
    return action, previous, changes


@transaction.atomic
def fact_upsert(
    *, tenant: Tenant, candidate: FactCandidate, actor: Actor, embedding: Sequence[float] | None = None
) -> UpsertResult:
    """Merge one candidate into semantic memory; see the module docstring. `embedding` (of the
    statement) lets batch writers embed many candidates at once; by default it is computed here."""
    c = _prepare(tenant, candidate)
    vector = list(embedding) if embedding is not None else embed_statements([c.statement])[0]
    _lock(tenant, c.entity, c.attribute)
    now = timezone.now()
    config = tenant.config

    live = list(
        Fact.objects.for_tenant(tenant)
        .filter(entity=c.entity, attribute=c.attribute, status__in=LIVE)
        .order_by("recorded_at")
    )
    cardinality = _resolve_cardinality(c, live)
    pending = [f for f in live if f.status == FactStatus.PENDING_REVIEW]
    timeline: list[Fact] = []

    if cardinality == Cardinality.SINGLE:
        timeline = _timeline(tenant, c.entity, c.attribute)
        prev, nxt = _split(timeline, c.observed_at)
        if prev is not None and prev.value_key == c.value_key and _covers(prev, c.observed_at):
            return _confirm(tenant, prev, c, actor, "same value.", now)
        resume = _seen_again(tenant, prev, c.observed_at) if prev is not None and _covers(prev, c.observed_at) else None
        if nxt is not None and nxt.value_key == c.value_key and resume is None:
            # The value held earlier than we knew: move its start back to this observation.
            nxt.valid_from = c.observed_at
            if prev is not None and (prev.valid_to is None or prev.valid_to > c.observed_at):
                prev.valid_to = c.observed_at
                prev.save(update_fields=["valid_to"])
            return _confirm(tenant, nxt, c, actor, f"same value, observed earlier ({c.observed_at.isoformat()}).", now)
        # Only the value holding at the time of observation (and pending ones) can be a near-duplicate.
        dedupe_pool = [*([prev] if prev is not None and _covers(prev, c.observed_at) else []), *pending]
    else:
        dedupe_pool = live

    exact = next((f for f in pending if f.value_key == c.value_key), None)
    if exact is None and cardinality == Cardinality.MULTI:
        exact = next((f for f in live if f.value_key == c.value_key), None)
    if exact is not None:
        return _confirm(tenant, exact, c, actor, "same value.", now)
    near = _near_duplicate(dedupe_pool, vector, config.dedupe_similarity)
    if near is not None:
        return _confirm(tenant, near[0], c, actor, f"near-duplicate statement (cosine {near[1]:.3f}).", now)

    fact = Fact(
        tenant=tenant,
        subject=c.subject,
        entity=c.entity,
        attribute=c.attribute,
        value=c.value,
        value_key=c.value_key,
        statement=c.statement,
        category=c.category,
        cardinality=cardinality,
        confidence=c.confidence,
        valid_from=c.observed_at,
        recorded_at=now,
        last_confirmed_at=now,
        origin=c.origin,
        object_entity=_object_entity(tenant, c),
        embedding=vector,
        updated_at=now,
    )
    action: UpsertAction = "created"
    previous: Fact | None = None
    changes: list[dict[str, Any]] = []
    if c.confidence < config.fact_review_threshold:
        fact.status = FactStatus.PENDING_REVIEW
        fact.save()
        action = "pending"
    elif cardinality == Cardinality.SINGLE:
        action, previous, changes = _place_single(
            tenant=tenant, fact=fact, timeline=timeline, actor=actor, episode_ids=c.episode_ids, now=now
        )
    else:
        fact.status = FactStatus.ACTIVE
        fact.save()
    _add_sources(tenant, fact, c.episodes)
    _log(
        tenant=tenant,
        fact=fact,
        kind=FactChangeKind.CREATED,
        actor=actor,
        reason="below the review threshold; waits for an operator." if action == "pending" else "",
        new_value=fact.value,
        new_status=fact.status,
        new_confidence=fact.confidence,
        source_episode_ids=c.episode_ids,
        observed_at=c.observed_at,
        at=now,
    )
    for change in changes:
        _log(tenant=tenant, actor=actor, source_episode_ids=c.episode_ids, at=now, **change)
    return UpsertResult(fact=fact, action=action, previous=previous)


def facts_upsert(*, tenant: Tenant, candidates: Sequence[FactCandidate], actor: Actor) -> list[UpsertResult]:
    """Many candidates, embedded in one batch, merged one by one in order (all or nothing)."""
    vectors = embed_statements([" ".join((c.statement or "").split()) or "-" for c in candidates])
    with transaction.atomic():
        return [
            fact_upsert(tenant=tenant, candidate=c, actor=actor, embedding=v)
            for c, v in zip(candidates, vectors, strict=True)
        ]


# --- explicit changes --------------------------------------------------------------------------------


@transaction.atomic
def fact_confirm(*, tenant: Tenant, fact_id: uuid.UUID | str, actor: Actor) -> Fact:
    """Someone vouches for the fact: confidence up, last_confirmed_at now."""
    fact = _lock_fact(tenant, fact_id)
    if fact.status not in LIVE:
        raise Conflict(f"Fact {fact.id} is {fact.status}; only active or pending facts can be confirmed.")
    now = timezone.now()
    old = fact.confidence
    fact.confidence = _combine(fact.confidence, CONFIRM_WEIGHT)
    fact.last_confirmed_at = now
    fact.confirmation_count += 1
    fact.updated_at = now
    fact.save(update_fields=["confidence", "last_confirmed_at", "confirmation_count", "updated_at"])
    _log(
        tenant=tenant,
        fact=fact,
        kind=FactChangeKind.CONFIRMED,
        actor=actor,
        reason="confirmed explicitly.",
        old_value=fact.value,
        new_value=fact.value,
        old_status=fact.status,
        new_status=fact.status,
        old_confidence=old,
        new_confidence=fact.confidence,
        observed_at=now,
        at=now,
    )
    return fact


def _withdraw(
    *, tenant: Tenant, fact: Fact, status: str, kind: str, actor: Actor, valid_to: datetime, now: datetime
) -> Fact:
    """Take a locked fact out of service with `status`, valid until `valid_to`, and log it as `kind`."""
    old_status = fact.status
    fact.status = status
    fact.valid_to = valid_to
    fact.updated_at = now
    fact.save(update_fields=["status", "valid_to", "updated_at"])
    _log(
        tenant=tenant,
        fact=fact,
        kind=kind,
        actor=actor,
        old_value=fact.value,
        old_status=old_status,
        new_status=status,
        old_confidence=fact.confidence,
        new_confidence=fact.confidence,
        at=now,
    )
    return fact


@transaction.atomic
def fact_retract(*, tenant: Tenant, fact_id: uuid.UUID | str, actor: Actor) -> Fact:
    """The fact was wrong: it stops being served and drops out of history (as_of), but is kept."""
    fact = _lock_fact(tenant, fact_id)
    if fact.status == FactStatus.RETRACTED:
        return fact
    now = timezone.now()
    return _withdraw(
        tenant=tenant,
        fact=fact,
        status=FactStatus.RETRACTED,
        kind=FactChangeKind.RETRACTED,
        actor=actor,
        valid_to=fact.valid_to or now,
        now=now,
    )


@transaction.atomic
def fact_expire(*, tenant: Tenant, fact_id: uuid.UUID | str, actor: Actor, at: datetime | None = None) -> Fact:
    """Forgetting: the fact was true until now (or `at`) but is no longer held. Already expired: no-op."""
    fact = _lock_fact(tenant, fact_id)
    if fact.status == FactStatus.EXPIRED:
        return fact
    if fact.status not in LIVE:
        raise Conflict(f"Fact {fact.id} is {fact.status}; only active or pending facts can expire.")
    now = timezone.now()
    return _withdraw(
        tenant=tenant,
        fact=fact,
        status=FactStatus.EXPIRED,
        kind=FactChangeKind.EXPIRED,
        actor=actor,
        valid_to=max(at or now, fact.valid_from),
        now=now,
    )


@transaction.atomic
def facts_decay(*, tenant: Tenant, confidences: Mapping[uuid.UUID, float], actor: Actor) -> int:
    """Lower the confidence of live facts (consolidation's decay), one 'decayed' change per fact.
    Values are clamped to [0, 1] and never raise a confidence; returns how many facts changed."""
    if not confidences:
        return 0
    now = timezone.now()
    facts = list(
        Fact.objects.for_tenant(tenant)
        .select_for_update()
        .filter(id__in=list(confidences), status__in=LIVE)
        .order_by("id")
    )
    changed: list[Fact] = []
    changes: list[FactChange] = []
    for fact in facts:
        new = min(fact.confidence, max(0.0, min(1.0, float(confidences[fact.id]))))
        if new == fact.confidence:
            continue
        changes.append(
            FactChange(
                tenant=tenant,
                fact=fact,
                kind=FactChangeKind.DECAYED,
                old_value=fact.value,
                new_value=fact.value,
                old_status=fact.status,
                new_status=fact.status,
                old_confidence=fact.confidence,
                new_confidence=new,
                reason=actor.reason,
                actor_type=actor.type,
                actor_id=actor.id,
                created_at=now,
            )
        )
        fact.confidence = new
        fact.updated_at = now
        changed.append(fact)
    Fact.objects.for_tenant(tenant).bulk_update(changed, ["confidence", "updated_at"])
    FactChange.objects.bulk_create(changes)
    return len(changed)


@transaction.atomic
def fact_edit(
    *,
    tenant: Tenant,
    fact_id: uuid.UUID | str,
    actor: Actor,
    value: str | None = None,
    statement: str | None = None,
    category: str | None = None,
    confidence: float | None = None,
) -> Fact:
    """Correct a live fact in place (an operator's or an agent's edit), logged with the old and new
    value. A real change of the world is a new fact through fact_upsert, not an edit."""
    fact = _lock_fact(tenant, fact_id)
    if fact.status not in LIVE:
        raise Conflict(f"Fact {fact.id} is {fact.status}; only active or pending facts can be edited.")
    errors: list[dict[str, str]] = []
    max_chars = settings.ENGRAM["MAX_TEXT_CHARS"]
    if value is not None and (not value.strip() or len(value) > max_chars):
        errors.append({"pointer": "/value", "detail": f"value must be 1 to {max_chars} characters."})
    if statement is not None and (not statement.strip() or len(statement) > max_chars):
        errors.append({"pointer": "/statement", "detail": f"statement must be 1 to {max_chars} characters."})
    if category is not None and category not in allowed_categories(tenant):
        errors.append({"pointer": "/category", "detail": f"unknown category {category!r}."})
    if confidence is not None and not (math.isfinite(confidence) and 0.0 <= confidence <= 1.0):
        errors.append({"pointer": "/confidence", "detail": "confidence must be between 0 and 1."})
    if errors:
        raise ValidationProblem("; ".join(f"{e['pointer']}: {e['detail']}" for e in errors), errors=errors)

    old_value, old_confidence = fact.value, fact.confidence
    fields: list[str] = []
    if value is not None and value.strip() != fact.value:
        key = value_key(value)
        clash = (
            Fact.objects.for_tenant(tenant)
            .filter(entity=fact.entity, attribute=fact.attribute, value_key=key, status__in=LIVE)
            .exclude(id=fact.id)
            .first()
        )
        if clash is not None:
            raise Conflict(f"Fact {clash.id} already holds this value; confirm it or retract one of them.")
        fact.value, fact.value_key = value.strip(), key
        fields += ["value", "value_key"]
    if statement is not None and " ".join(statement.split()) != fact.statement:
        fact.statement = " ".join(statement.split())
        fact.embedding = embed_statements([fact.statement])[0]
        fields += ["statement", "embedding"]
    if category is not None and category != fact.category:
        fact.category = category
        fields.append("category")
    if confidence is not None and confidence != fact.confidence:
        fact.confidence = float(confidence)
        fields.append("confidence")
    if not fields:
        return fact
    fact.updated_at = timezone.now()
    fact.save(update_fields=[*fields, "updated_at"])
    if "statement" in fields:
        fact.refresh_from_db(fields=["search_vector"])
    _log(
        tenant=tenant,
        fact=fact,
        kind=FactChangeKind.EDITED,
        actor=actor,
        reason=f"edited {', '.join(f for f in fields if f not in ('value_key', 'embedding'))}.",
        old_value=old_value,
        new_value=fact.value,
        old_status=fact.status,
        new_status=fact.status,
        old_confidence=old_confidence,
        new_confidence=fact.confidence,
        at=fact.updated_at,
    )
    return fact


@transaction.atomic
def fact_review_decide(
    *,
    tenant: Tenant,
    fact_id: uuid.UUID | str,
    approve: bool,
    actor: Actor,
    value: str | None = None,
    statement: str | None = None,
) -> Fact:
    """An operator's decision on a pending fact. Approved, it enters its timeline as if it had just
    been upserted with enough confidence (it may supersede the active value, or become history if an
    even newer value is known); rejected, it is retracted. `value`/`statement` correct it first."""
    fact = _lock_fact(tenant, fact_id)
    if fact.status != FactStatus.PENDING_REVIEW:
        raise Conflict(f"Fact {fact.id} is {fact.status}, not pending_review.")
    now = timezone.now()
    if not approve:
        fact.status = FactStatus.RETRACTED
        fact.valid_to = now
        fact.updated_at = now
        fact.save(update_fields=["status", "valid_to", "updated_at"])
        _log(
            tenant=tenant,
            fact=fact,
            kind=FactChangeKind.REVIEW_REJECTED,
            actor=actor,
            old_value=fact.value,
            old_status=FactStatus.PENDING_REVIEW,
            new_status=fact.status,
            old_confidence=fact.confidence,
            new_confidence=fact.confidence,
            at=now,
        )
        return fact

    if value is not None or statement is not None:
        fact = fact_edit(tenant=tenant, fact_id=fact.id, actor=actor, value=value, statement=statement)
    episode_ids = list(FactSource.objects.for_tenant(tenant).filter(fact=fact).values_list("episode_id", flat=True))
    new_confidence = max(fact.confidence, tenant.config.fact_review_threshold)
    old_confidence = fact.confidence
    fact.confidence = new_confidence
    fact.updated_at = now
    fact.last_confirmed_at = now
    changes: list[dict[str, Any]] = []
    if fact.cardinality == Cardinality.SINGLE:
        fact.save(update_fields=["confidence", "updated_at", "last_confirmed_at"])
        timeline = _timeline(tenant, fact.entity, fact.attribute, exclude=fact.id)
        _, _, changes = _place_single(
            tenant=tenant, fact=fact, timeline=timeline, actor=actor, episode_ids=episode_ids, now=now
        )
    else:
        fact.status = FactStatus.ACTIVE
        fact.save(update_fields=["status", "confidence", "updated_at", "last_confirmed_at"])
    _log(
        tenant=tenant,
        fact=fact,
        kind=FactChangeKind.REVIEW_APPROVED,
        actor=actor,
        old_value=fact.value,
        new_value=fact.value,
        old_status=FactStatus.PENDING_REVIEW,
        new_status=fact.status,
        old_confidence=old_confidence,
        new_confidence=fact.confidence,
        source_episode_ids=episode_ids,
        at=now,
    )
    for change in changes:
        _log(tenant=tenant, actor=actor, source_episode_ids=episode_ids, at=now, **change)
    return fact


@transaction.atomic
def fact_revert(*, tenant: Tenant, change_id: int, actor: Actor) -> UpsertResult:
    """Undo a supersession: the superseded value becomes the current one again, through fact_upsert
    (so the one-active-value rule and the history hold), and the revert is logged on both facts."""
    change = FactChange.objects.for_tenant(tenant).filter(id=change_id).select_related("fact").first()
    if change is None:
        raise NotFound(f"Change {change_id} does not exist.")
    if change.kind != FactChangeKind.SUPERSEDED:
        raise Conflict(f"Change {change_id} is a '{change.kind}' change; only a supersession can be reverted.")
    loser = change.fact
    if loser.status != FactStatus.SUPERSEDED:
        raise Conflict(f"Fact {loser.id} is {loser.status}, no longer superseded.")
    episode_ids = list(FactSource.objects.for_tenant(tenant).filter(fact=loser).values_list("episode_id", flat=True))
    origin = FactOrigin.OPERATOR if actor.type == ActorType.OPERATOR else FactOrigin.API
    result = fact_upsert(
        tenant=tenant,
        candidate=FactCandidate(
            subject=loser.subject,
            entity=loser.entity,
            attribute=loser.attribute,
            value=loser.value,
            statement=loser.statement,
            category=loser.category,
            confidence=max(loser.confidence, tenant.config.fact_review_threshold),
            source_episode_ids=episode_ids,
            observed_at=timezone.now(),
            cardinality=loser.cardinality,
            origin=origin,
            object_entity=loser.object_entity,
        ),
        actor=actor,
        embedding=list(loser.embedding) if loser.embedding is not None else None,
    )
    for fact, related in ((result.fact, loser), (loser, result.fact)):
        _log(
            tenant=tenant,
            fact=fact,
            kind=FactChangeKind.REVERTED,
            actor=actor,
            reason=f"revert of change {change.id}.",
            old_value=change.new_value,
            new_value=loser.value,
            old_status=fact.status,
            new_status=fact.status,
            related_fact=related,
            source_episode_ids=episode_ids,
        )
    return result


def fact_mark_used(*, tenant: Tenant, fact_ids: Iterable[uuid.UUID | str]) -> int:
    """The router served these facts: count the use (one UPDATE; usage is not a change of belief,
    so it is not logged as a FactChange). Returns how many rows were touched."""
    ids: list[uuid.UUID] = []
    for raw in fact_ids:
        try:
            ids.append(raw if isinstance(raw, uuid.UUID) else uuid.UUID(str(raw)))
        except ValueError:
            continue
    if not ids:
        return 0
    return (
        Fact.objects.for_tenant(tenant)
        .filter(id__in=ids)
        .update(use_count=F("use_count") + 1, last_used_at=timezone.now())
    )

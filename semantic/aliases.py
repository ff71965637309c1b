"""Entity aliases in semantic memory: setting one files the facts known under the alias under its entity.

The alias table and its resolution live in episodic.aliases (episode entities and episode search read
it too, and episodic cannot import semantic). Here: an operator's alias, or one consolidation learned,
is recorded there and then the live facts filed under the alias move to the entity through the merge
(`fact_upsert`): a duplicate confirms, a single-valued attribute keeps its latest value, and every moved
row is retracted with a `merged` change that names the fact it went into. Removing an alias moves
nothing back: facts merged under its entity stay there.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from core.errors import DomainError
from episodic.aliases import AliasAction, entity_alias_learn, entity_alias_put
from episodic.models import EntityAlias, Episode
from semantic.history import sources_add
from semantic.models import Fact, FactChangeKind, FactSource, FactStatus
from semantic.services import LIVE, fact_upsert, lock_fact, withdraw_locked
from semantic.types import Actor, FactCandidate, UpsertResult
from tenants.models import Tenant


@dataclasses.dataclass(frozen=True)
class AliasSetResult:
    alias: EntityAlias
    action: AliasAction
    facts_moved: int


@transaction.atomic
def entity_alias_set(*, tenant: Tenant, alias: str, entity: str, actor: Actor) -> AliasSetResult:
    """An operator's alias (episodic.aliases.entity_alias_put), then the facts filed under it move."""
    row, action = entity_alias_put(
        tenant=tenant, alias=alias, entity=entity, created_by=f"{actor.type}:{actor.id}" if actor.id else actor.type
    )
    moved = facts_rehome(tenant=tenant, alias=row.alias, entity=row.entity, actor=actor)
    return AliasSetResult(alias=row, action=action, facts_moved=moved)


@transaction.atomic
def entity_alias_learned(
    *, tenant: Tenant, alias: str, entity: str, subject: str, episode_id: int | None, actor: Actor
) -> EntityAlias | None:
    """An alias consolidation learned from the subject's conversation; the subject's own facts filed
    under it move. None when it was not recorded (see episodic.aliases.entity_alias_learn)."""
    row = entity_alias_learn(tenant=tenant, alias=alias, entity=entity, subject=subject, episode_id=episode_id)
    if row is not None:
        facts_rehome(tenant=tenant, alias=row.alias, entity=row.entity, actor=actor, subject=subject)
    return row


def facts_rehome(*, tenant: Tenant, alias: str, entity: str, actor: Actor, subject: str | None = None) -> int:
    """Move the live facts filed under `alias` to `entity` (only `subject`'s, when given); returns how
    many moved. Observation times, confidence and confirmations go with each fact."""
    ids = list(
        Fact.objects.filter(entity=alias, status__in=LIVE, **({"subject": subject} if subject is not None else {}))
        .order_by("valid_from", "recorded_at", "id")
        .values_list("id", flat=True)
    )
    reason = f"{alias!r} is an alias of {entity!r}."
    return sum(_rehome(tenant=tenant, fact_id=fact_id, entity=entity, actor=actor, reason=reason) for fact_id in ids)


def _rehome(*, tenant: Tenant, fact_id: object, entity: str, actor: Actor, reason: str) -> bool:
    old = lock_fact(tenant, str(fact_id))
    if old.status not in LIVE or old.entity == entity:
        return False
    episodes = [
        s.episode
        for s in FactSource.objects.filter(fact=old, episode__tenant_id=tenant.id)
        .select_related("episode")
        .defer("episode__embedding", "episode__search_vector")
    ]
    threshold = tenant.config.fact_review_threshold
    # A pending fact stays pending and an active one active: the merge decides by confidence.
    confidence = (
        min(old.confidence, math.nextafter(threshold, 0.0))
        if old.status == FactStatus.PENDING_REVIEW
        else max(old.confidence, threshold)
    )
    last_confirmed: dict[object, datetime] = dict(
        Fact.objects.filter(subject=old.subject, entity=entity, attribute=old.attribute, status__in=LIVE).values_list(
            "id", "last_confirmed_at"
        )
    )
    try:
        with transaction.atomic():
            result = _upsert_moved(
                tenant, old, entity, confidence, episodes, actor, keep_cardinality=not last_confirmed
            )
    except DomainError:
        # The entity holds the attribute in a way this fact cannot join (another cardinality): it
        # stays where it is, under the alias.
        return False
    moved = result.fact
    sources_add(tenant=tenant, fact=moved, episodes=episodes)
    if result.action == "confirmed":
        # A second record of the same belief, not a new observation: its staleness is the fresher one's.
        before = last_confirmed.get(moved.id, old.last_confirmed_at)
        moved.last_confirmed_at = max(before, old.last_confirmed_at)
        moved.save(update_fields=["last_confirmed_at"])
    else:
        moved.confidence = old.confidence
        moved.last_confirmed_at = old.last_confirmed_at
        moved.confirmation_count = old.confirmation_count
        moved.use_count = old.use_count
        moved.last_used_at = old.last_used_at
        moved.save(update_fields=["confidence", "last_confirmed_at", "confirmation_count", "use_count", "last_used_at"])
    now = timezone.now()
    withdraw_locked(
        tenant=tenant,
        fact=old,
        status=FactStatus.RETRACTED,
        kind=FactChangeKind.MERGED,
        actor=actor,
        valid_to=old.valid_to or now,
        now=now,
        reason=f"filed under {entity!r} as fact {moved.id}: {reason}",
        source_episode_ids=[e.id for e in episodes],
        new_value=moved.value,
        related_fact=moved,
    )
    return True


def _upsert_moved(
    tenant: Tenant,
    old: Fact,
    entity: str,
    confidence: float,
    episodes: list[Episode],
    actor: Actor,
    *,
    keep_cardinality: bool,
) -> UpsertResult:
    return fact_upsert(
        tenant=tenant,
        candidate=FactCandidate(
            subject=old.subject,
            entity=entity,
            attribute=old.attribute,
            value=old.value,
            statement=old.statement,
            category=old.category,
            confidence=confidence,
            source_episode_ids=[e.id for e in episodes if e.subject == old.subject],
            observed_at=old.valid_from,
            # The entity's own cardinality for the attribute wins when it has one.
            cardinality=old.cardinality if keep_cardinality else None,
            origin=old.origin,
            object_entity=old.object_entity,
        ),
        actor=actor,
        embedding=list(old.embedding) if old.embedding is not None else None,
    )

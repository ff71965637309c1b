"""Writes to semantic memory.

Every fact enters through `fact_upsert`, the one merge shared by the API, consolidation and operators:
duplicates confirm, a single-valued attribute keeps one value at a time (the value observed later
wins, whatever the order of arrival), multi-valued attributes accumulate, and low-confidence facts
wait for review. Nothing is deleted: a replaced value is closed, and every change is logged as a
FactChange with its actor, reason and source episodes.

A fact's slot is (tenant, subject, entity, attribute): the facts of one subject's memory (or of none,
subject "") merge, confirm and supersede each other, never another subject's, whatever their entity
(subject ids are exact strings, DESIGN.md invariant 12). Writers of one slot are serialised by a
transaction-scoped row lock (tenants.locks); the partial unique constraints on Fact are the last line
behind it.

Validation lives in semantic.validation, the timeline of single-valued attributes in
semantic.timeline, and the change log in semantic.history; the public `fact_*` writes are here.
"""

from __future__ import annotations

import logging
import math
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from core.embedding import embedding_cache
from core.errors import Conflict, NotFound, ValidationProblem
from core.terms import terms
from episodic.models import Episode
from semantic import predicates
from semantic.history import ChangeDraft, change_log, sources_add
from semantic.models import (
    ActorType,
    Cardinality,
    Fact,
    FactChange,
    FactChangeKind,
    FactOrigin,
    FactSource,
    FactStatus,
)
from semantic.normalise import (
    default_cardinality,
    normalise_entity,
    value_key,
)
from semantic.timeline import close, covers, place_single, seen_again, timeline_of, timeline_split
from semantic.types import Actor, FactCandidate, UpsertAction, UpsertResult
from semantic.validation import PreparedFact, allowed_categories, fact_prepare
from semantic.values import values_conflict, values_same
from tenants.locks import subject_lock, tenant_xact_lock
from tenants.models import Tenant
from tenants.scope import for_each_batch

logger = logging.getLogger(__name__)

LIVE = (FactStatus.ACTIVE, FactStatus.PENDING_REVIEW)
# An explicit confirmation (operator or API) halves the remaining doubt.
CONFIRM_WEIGHT = 0.5


def _combine(old: float, new: float) -> float:
    """Independent evidence: noisy-OR. Never lowers confidence, never exceeds 1."""
    return min(1.0, max(old, 1.0 - (1.0 - old) * (1.0 - new)))


# --- embeddings --------------------------------------------------------------------------------------


def embed_statements(texts: Sequence[str]) -> list[list[float]]:
    return embedding_cache.embed(texts)


def facts_reembed(*, tenant: Tenant, batch_size: int = 256, progress: Callable[[int], None] | None = None) -> int:
    """Embed again, with today's embedder, the statement of every fact of the tenant that has a vector
    (history included: a revert brings an old row back), batch by batch, each batch its own transaction.
    After a change of embedding file (episodic.passages.passages_reembed says why). Returns how many."""

    def store(batch: list[Fact]) -> None:
        # The text fact_upsert embeds.
        vectors = embed_statements([" ".join(f.statement.split()) or "-" for f in batch])
        for fact, vector in zip(batch, vectors, strict=True):
            fact.embedding = vector
        Fact.objects.bulk_update(batch, ["embedding"])

    return for_each_batch(
        tenant=tenant,
        rows=lambda: Fact.objects.filter(embedding__isnull=False).only("id", "statement"),
        each=store,
        batch_size=batch_size,
        progress=progress,
    )


# --- locking ---------------------------------------------------------------------------------------------


def _lock(tenant: Tenant, subject: str, entity: str, attribute: str) -> None:
    """Serialise every writer of one slot, (tenant, subject, entity, attribute), until the transaction
    ends; first the subject's own slot, shared with its other writers and held back by its erasure
    (tenants.locks, in that order)."""
    subject_lock(tenant.id, [subject])
    tenant_xact_lock(tenant.id, "fact", subject, entity, attribute)


def _slot(fact: Fact | PreparedFact) -> tuple[str, str, str]:
    return fact.subject, fact.entity, fact.attribute


def _get_for_update(tenant: Tenant, fact_id: uuid.UUID | str, *, lock: bool = True) -> Fact:
    try:
        key = fact_id if isinstance(fact_id, uuid.UUID) else uuid.UUID(str(fact_id))
    except ValueError:
        raise NotFound(f"Fact {fact_id} does not exist.") from None
    facts = Fact.objects.all()
    fact = (facts.select_for_update() if lock else facts).filter(id=key).first()
    if fact is None:
        raise NotFound(f"Fact {fact_id} does not exist.")
    return fact


def lock_fact(tenant: Tenant, fact_id: uuid.UUID | str) -> Fact:
    """Lock the fact's slot, then the row: the order of `fact_upsert`, which takes the slot and then
    writes rows. Row first here deadlocked against it (tenants/locks.py)."""
    key = _get_for_update(tenant, fact_id, lock=False)
    while True:
        _lock(tenant, *_slot(key))
        fact = _get_for_update(tenant, fact_id)
        if _slot(fact) == _slot(key):
            return fact
        key = fact  # moved to another entity before the slot was ours: lock that one's slot too


# --- the merge ---------------------------------------------------------------------------------------


def _resolve_cardinality(c: PreparedFact, live: Sequence[Fact]) -> str:
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


def _object_entity(tenant: Tenant, c: PreparedFact) -> str | None:
    if c.object_entity:
        return c.object_entity
    name = c.value_entity
    if not name or name == c.entity or name.replace(".", "").isdigit():
        return None
    dictionary = {normalise_entity(e) for e in tenant.config.entity_dictionary if isinstance(e, str)}
    if name in dictionary or Fact.objects.filter(entity=name).exists():
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


def _same_value(fact: Fact, c: PreparedFact) -> bool:
    """The candidate states the fact's value: the same key, the same value written another way
    (semantic.values), or the fact's value named through an entity alias ("Mel" for "Melanie")."""
    if fact.value_key == c.value_key or values_same(fact.value, c.value):
        return True
    return bool(c.value_entity) and c.value_entity in {normalise_entity(fact.value), fact.object_entity}


def _same_reason(fact: Fact, c: PreparedFact) -> str:
    return "same value." if fact.value_key == c.value_key else f"same value, written {c.value!r}."


def _vouch(
    *,
    tenant: Tenant,
    fact: Fact,
    actor: Actor,
    weight: float,
    reason: str,
    new_value: str,
    observed_at: datetime,
    now: datetime,
    episodes: Sequence[Episode] = (),
    fields: Sequence[str] = (),
) -> None:
    """Evidence for a live fact again: its confidence combined with `weight`, confirmed now, the
    `episodes` added to its sources and the confirmation logged. `fields` were changed by the caller."""
    old_confidence = fact.confidence
    fact.confidence = _combine(fact.confidence, weight)
    fact.last_confirmed_at = now
    fact.confirmation_count += 1
    fact.updated_at = now
    fact.save(update_fields=["confidence", "last_confirmed_at", "confirmation_count", "updated_at", *fields])
    sources_add(tenant=tenant, fact=fact, episodes=episodes)
    change_log(
        tenant=tenant,
        fact=fact,
        kind=FactChangeKind.CONFIRMED,
        actor=actor,
        reason=reason,
        old_value=fact.value,
        new_value=new_value,
        old_status=fact.status,
        new_status=fact.status,
        old_confidence=old_confidence,
        new_confidence=fact.confidence,
        source_episode_ids=[e.id for e in episodes],
        observed_at=observed_at,
        at=now,
    )


def _confirm(tenant: Tenant, fact: Fact, c: PreparedFact, actor: Actor, reason: str, now: datetime) -> UpsertResult:
    _vouch(
        tenant=tenant,
        fact=fact,
        actor=actor,
        weight=c.confidence,
        reason=reason,
        new_value=c.value,
        observed_at=c.observed_at,
        now=now,
        episodes=c.episodes,
        fields=["valid_from"],
    )
    return UpsertResult(fact=fact, action="confirmed", previous=None)


@transaction.atomic
def fact_upsert(
    *, tenant: Tenant, candidate: FactCandidate, actor: Actor, embedding: Sequence[float] | None = None
) -> UpsertResult:
    """Merge one candidate into semantic memory; see the module docstring. `embedding` (of the
    statement) lets batch writers embed many candidates at once; by default it is computed here."""
    c = fact_prepare(tenant=tenant, candidate=candidate)
    vector = list(embedding) if embedding is not None else embed_statements([c.statement])[0]
    _lock(tenant, *_slot(c))
    now = timezone.now()
    config = tenant.config

    live = list(
        Fact.objects.filter(subject=c.subject, entity=c.entity, attribute=c.attribute, status__in=LIVE).order_by(
            "recorded_at"
        )
    )
    cardinality = _resolve_cardinality(c, live)
    pending = [f for f in live if f.status == FactStatus.PENDING_REVIEW]
    timeline: list[Fact] = []

    if cardinality == Cardinality.SINGLE:
        timeline = timeline_of(tenant, *_slot(c))
        prev, nxt = timeline_split(timeline, c.observed_at)
        if prev is not None and _same_value(prev, c) and covers(prev, c.observed_at):
            return _confirm(tenant, prev, c, actor, _same_reason(prev, c), now)
        resume = seen_again(tenant, prev, c.observed_at) if prev is not None and covers(prev, c.observed_at) else None
        if nxt is not None and _same_value(nxt, c) and resume is None:
            # The value held earlier than we knew: move its start back to this observation.
            nxt.valid_from = c.observed_at
            if prev is not None and (prev.valid_to is None or prev.valid_to > c.observed_at):
                prev.valid_to = c.observed_at
                prev.save(update_fields=["valid_to"])
            return _confirm(tenant, nxt, c, actor, f"same value, observed earlier ({c.observed_at.isoformat()}).", now)
        # One value at a time: a different value is an update, however alike the statements read,
        # so no statement is a near-duplicate here; a pending fact of the same value confirms.
        dedupe_pool = []
    else:
        # Statements of two different values (values_conflict: numbers, versions, dates, addresses,
        # amounts, names) are never near-duplicates.
        dedupe_pool = [f for f in live if not values_conflict(f.value, c.value)]

    exact = next((f for f in pending if _same_value(f, c)), None)
    if exact is None and cardinality == Cardinality.MULTI:
        exact = next((f for f in live if _same_value(f, c)), None)
    if exact is not None:
        return _confirm(tenant, exact, c, actor, _same_reason(exact, c), now)
    near = _near_duplicate(dedupe_pool, vector, config.dedupe_similarity)
    if near is not None:
        return _confirm(tenant, near[0], c, actor, f"near-duplicate statement (cosine {near[1]:.3f}).", now)

    result, changes = _insert(
        tenant=tenant, c=c, vector=vector, actor=actor, cardinality=cardinality, timeline=timeline, now=now
    )
    closed = supersede_same_predicate(tenant=tenant, fact=result.fact, now=now) + supersede_by_event(
        tenant=tenant, fact=result.fact, now=now
    )
    changes += closed
    if closed and result.action == "created":
        result = UpsertResult(fact=result.fact, action="superseded", previous=closed[0].fact)
    change_log(
        tenant=tenant,
        fact=result.fact,
        kind=FactChangeKind.CREATED,
        actor=actor,
        reason="below the review threshold; waits for an operator." if result.action == "pending" else "",
        new_value=result.fact.value,
        new_status=result.fact.status,
        new_confidence=result.fact.confidence,
        source_episode_ids=c.episode_ids,
        observed_at=c.observed_at,
        at=now,
    )
    for change in changes:
        change.log(tenant=tenant, actor=actor, source_episode_ids=c.episode_ids, at=now)
    return result


def _insert(
    *,
    tenant: Tenant,
    c: PreparedFact,
    vector: Sequence[float],
    actor: Actor,
    cardinality: str,
    timeline: Sequence[Fact],
    now: datetime,
) -> tuple[UpsertResult, list[ChangeDraft]]:
    """Store a new fact for `c` (pending, placed in its timeline, or one more value) with its sources.
    Returns the changes the placement made to other facts; the caller logs the new fact's own entry."""
    fact = Fact(
        tenant=tenant,
        **{name: getattr(c, name) for name in Fact.STATEMENT_FIELDS},
        cardinality=cardinality,
        valid_from=c.observed_at,
        recorded_at=now,
        last_confirmed_at=now,
        object_entity=_object_entity(tenant, c),
        embedding=list(vector),
        updated_at=now,
    )
    action: UpsertAction = "created"
    previous: Fact | None = None
    changes: list[ChangeDraft] = []
    if c.confidence < tenant.config.fact_review_threshold:
        fact.status = FactStatus.PENDING_REVIEW
        fact.save()
        action = "pending"
    elif cardinality == Cardinality.SINGLE:
        action, previous, changes = place_single(
            tenant=tenant, fact=fact, timeline=timeline, actor=actor, episode_ids=c.episode_ids, now=now
        )
    else:
        fact.status = FactStatus.ACTIVE
        fact.save()
    sources_add(tenant=tenant, fact=fact, episodes=c.episodes)
    return UpsertResult(fact=fact, action=action, previous=previous), changes


# How many of the subject's facts, the nearest by statement, are read as the same predicate as a new one.
SAME_PREDICATE_POOL = 8
# Below this cosine of the statements themselves, two facts are not compared as predicates.
SAME_PREDICATE_FLOOR = 0.35


def _trace(fact: Fact, old: Fact, reason: str, *, superseded: bool = False) -> None:
    """Why an earlier fact was or was not superseded by a new one: ids, attributes and the reason, no
    value or statement (a log line outlives an erasure)."""
    logger.debug(
        "supersession %s: %s (%s) by %s (%s): %s",
        "yes" if superseded else "no",
        old.id,
        old.attribute,
        fact.id,
        fact.attribute,
        reason,
    )


# How near (MiniLM) an event's frame, without its subject, reads the name of a single-valued slot of the
# subject's for the event to begin that slot's value. On our sentences: "took a job at something" 0.52
# from "employer" (0.45 from "job title"), "got hired by something" 0.51, "started a new job at
# something" 0.50 (0.48 from "job title"), "got a new car, a something" 0.60 from "car"; below it
# "joined something" 0.29 from "employer", "enrolled at something" 0.43 (0.47 from "school"), "started
# at something" 0.23, "took a course at something" 0.21.
EVENT_NEAR_SLOT = 0.50


def supersede_by_event(*, tenant: Tenant, fact: Fact, now: datetime) -> list[ChangeDraft]:
    """An event in which the subject took up a new thing of theirs ("took a job at Ardent Labs", read as
    an experience; "got hired by Ardent Labs", read as a possession) closes the value of the subject's single-valued slot it names: the event's typed
    value (`predicates.current_value`) is of the slot value's kind and differs, and the event's frame
    reads that slot's name nearest of the subject's slots, at least EVENT_NEAR_SLOT. The slot's own name
    is the object's type: "took a job at" reads "employer", "joined" reads no slot (a gym, a club or a
    company alike), so "joined Planet Fitness" closes nothing. An addition, a hypothesis, an occasion,
    the past, a denial or someone else's event closes nothing."""
    if (
        fact.status != FactStatus.ACTIVE
        or fact.origin != FactOrigin.EXTRACTED
        or fact.attribute not in predicates.GENERIC_ATTRIBUTES | {"experiences"}
        or not predicates.takes_up(fact.statement, subject=fact.entity)
    ):
        return []
    subject, statement = fact.entity, fact.statement
    typed = predicates.current_value(statement, subject=subject)
    kind = predicates.deciding_kind(typed.text) if typed is not None else None
    if typed is None or kind is None:
        return []
    if (
        predicates.adds(statement)
        or predicates.hedges(statement)
        or predicates.for_one_occasion(statement)
        or predicates.tells_the_past(statement)
        or predicates.denies(statement)
    ):
        return []
    slots = list(
        Fact.objects.filter(
            entity=fact.entity,
            subject=fact.subject,
            status=FactStatus.ACTIVE,
            origin=FactOrigin.EXTRACTED,
            cardinality=Cardinality.SINGLE,
            valid_from__lt=fact.valid_from,
        )
        .exclude(attribute__in=predicates.EVENT_ATTRIBUTES | predicates.GENERIC_ATTRIBUTES)
        .only("id", "attribute", "value", "valid_from")
    )
    if not slots:
        return []
    names = sorted({f.attribute for f in slots})
    framed = predicates.frame(statement, subject=subject, value=typed.text)
    framed = re.sub(rf"^\s*{re.escape(subject)}\s+", "", framed, flags=re.I)
    vectors = np.asarray(embed_statements([framed] + [n.replace("_", " ") for n in names]), dtype=np.float32)
    near = vectors[1:] @ vectors[0]
    best = int(np.argmax(near))
    # Someone else's event ("my brother took a job at ..."), but not the person the slot names ("got a new
    # manager, Jordan Lee": the manager is whom the slot holds).
    named = re.sub(rf"\b{re.escape(names[best].replace('_', ' '))}\b", " ", statement, flags=re.I)
    if predicates.someone_elses(named, subject=subject, value=typed.text):
        return []
    changes: list[ChangeDraft] = []
    for old in slots:
        old_kind = predicates.deciding_kind(old.value)
        if old.attribute != names[best] or near[best] < EVENT_NEAR_SLOT:
            _trace(fact, old, f"an event read {float(near[names.index(old.attribute)]):.2f} from the slot's name")
            continue
        if old_kind is None or not predicates.same_kind(old_kind, kind) or values_same(old.value, typed.text):
            _trace(fact, old, "an event of another value kind, or the same value")
            continue
        reason = f"an event took up another value of the slot (its name at cosine {float(near[best]):.2f})."
        change = _close_superseded(tenant, old.id, by=fact, new_value=typed.text, reason=reason, now=now)
        if change is not None:
            _trace(fact, old, f"an event read {float(near[best]):.2f} from the slot's name", superseded=True)
            changes.append(change)
    return changes


def _close_superseded(
    tenant: Tenant, old_id: uuid.UUID, *, by: Fact, new_value: str, reason: str, now: datetime
) -> ChangeDraft | None:
    """Close the active fact `old_id` as superseded by `by`, under its row lock; None when it is no longer
    active (another writer closed it first)."""
    locked = lock_fact(tenant, old_id)
    if locked.status != FactStatus.ACTIVE:
        return None
    old_status = close(locked, at=max(by.valid_from, locked.valid_from), by=by, now=now)
    return ChangeDraft(
        fact=locked,
        kind=FactChangeKind.SUPERSEDED,
        reason=reason,
        old_value=locked.value,
        new_value=new_value,
        old_status=old_status,
        new_status=locked.status,
        related_fact=by,
    )


def supersede_same_predicate(*, tenant: Tenant, fact: Fact, now: datetime) -> list[ChangeDraft]:
    """A new active fact read from what the subject said supersedes the subject's active facts that say
    the same thing about them with another value of the same type (semantic.predicates.judge),
    whatever their attributes: "replaced Kong with Envoy as our API gateway" closes "our API gateway is
    Kong". Facts written through the API name their attribute and are left to it; events (experiences,
    plans) neither supersede nor are superseded. Returns the changes to log."""
    if (
        fact.status != FactStatus.ACTIVE
        or fact.origin != FactOrigin.EXTRACTED
        or fact.attribute in predicates.EVENT_ATTRIBUTES
        or fact.embedding is None
    ):
        return []
    if predicates.deciding_kind(fact.value) is None:
        logger.debug(
            "supersession skipped: %s (%s): a value of no kind (%d words, %d typed)",
            fact.id,
            fact.attribute,
            len(fact.value.split()),
            len(predicates.typed_spans(fact.value)),
        )
        return []
    pool = (
        Fact.objects.filter(
            entity=fact.entity,
            subject=fact.subject,
            status=FactStatus.ACTIVE,
            origin=FactOrigin.EXTRACTED,
            valid_from__lt=fact.valid_from,
            embedding__isnull=False,
        )
        .exclude(id=fact.id)
        .exclude(attribute__in=predicates.EVENT_ATTRIBUTES)
    )
    if fact.cardinality == Cardinality.SINGLE:
        pool = pool.exclude(attribute=fact.attribute)  # its own timeline has placed it
    new_kind = predicates.deciding_kind(fact.value)
    rows = []
    for f in pool.only("id", "entity", "attribute", "value", "statement", "embedding", "subject", "valid_from"):
        old_kind = predicates.deciding_kind(f.value)
        if (
            old_kind is None
            or new_kind is None
            or not (
                predicates.same_kind(old_kind, new_kind)
                or (predicates.thing_word(old_kind) and predicates.thing_word(new_kind))
            )
        ):
            _trace(fact, f, f"values of different kinds ({old_kind and old_kind.kind}, {new_kind and new_kind.kind})")
        elif not values_same(f.value, fact.value):
            rows.append(f)
    if not rows:
        return []
    near = np.asarray([np.asarray(f.embedding, dtype=np.float32) for f in rows]) @ np.asarray(
        fact.embedding, dtype=np.float32
    )
    order = [i for i in np.argsort(-near)[:SAME_PREDICATE_POOL] if near[i] >= SAME_PREDICATE_FLOOR]
    for i in set(range(len(rows))) - set(order):
        _trace(fact, rows[i], f"statements apart (cosine {near[i]:.2f})")
    if not order:
        return []
    subject = fact.entity  # whom the statements are about: the speaker named in them
    frames = embed_statements(
        [predicates.frame(fact.statement, subject=subject, value=fact.value)]
        + [predicates.frame(rows[i].statement, subject=subject, value=rows[i].value) for i in order]
    )
    changed = predicates.says_change(fact.statement, subject=subject)
    # Two states said with a word or two are compared by what the words mean (predicates.SIMILAR_TERMS).
    values = (
        embed_statements(
            [predicates.with_head(fact.statement, fact.value)]
            + [predicates.with_head(rows[i].statement, rows[i].value) for i in order]
        )
        if new_kind is not None and predicates.thing_word(new_kind)
        else None
    )
    changes: list[ChangeDraft] = []
    for n, (i, vector) in enumerate(zip(order, frames[1:], strict=True)):
        old = rows[i]
        # Named attributes (a writer's "database" of many values, or its "database" and "cache") say
        # what the fact is about: they accumulate, or are two predicates, unless the later statement
        # tells a change.
        named_apart = not ({old.attribute, fact.attribute} & predicates.GENERIC_ATTRIBUTES)
        if named_apart and not changed:
            _trace(fact, old, "two named attributes and no change")
            continue
        similarity = float(np.dot(np.asarray(frames[0], dtype=np.float32), np.asarray(vector, dtype=np.float32)))
        verdict = predicates.judge(
            old_statement=old.statement,
            old_value=old.value,
            new_statement=fact.statement,
            new_value=fact.value,
            similarity=similarity,
            subject=subject,
            values_similarity=(
                float(np.dot(np.asarray(values[0], dtype=np.float32), np.asarray(values[n + 1], dtype=np.float32)))
                if values is not None
                else None
            ),
        )
        _trace(fact, old, verdict.reason, superseded=verdict.superseded)
        if not verdict.superseded:
            continue
        reason = f"the same predicate said again with another value (frames at cosine {similarity:.2f})."
        change = _close_superseded(tenant, old.id, by=fact, new_value=fact.value, reason=reason, now=now)
        if change is not None:
            changes.append(change)
    return changes


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
    """Someone vouches for the fact: confidence up, last_confirmed_at now. A pending fact is thereby
    accepted, as an operator's approval would accept it (`_accept_pending`)."""
    fact = lock_fact(tenant, fact_id)
    if fact.status not in LIVE:
        raise Conflict(f"Fact {fact.id} is {fact.status}; only active or pending facts can be confirmed.")
    now = timezone.now()
    if fact.status == FactStatus.PENDING_REVIEW:
        return _accept_pending(
            tenant=tenant,
            fact=fact,
            actor=actor,
            kind=FactChangeKind.CONFIRMED,
            reason="confirmed explicitly; the pending value is accepted.",
            confidence=_combine(fact.confidence, CONFIRM_WEIGHT),
            now=now,
        )
    _vouch(
        tenant=tenant,
        fact=fact,
        actor=actor,
        weight=CONFIRM_WEIGHT,
        reason="confirmed explicitly.",
        new_value=fact.value,
        observed_at=now,
        now=now,
    )
    return fact


def withdraw_locked(
    *,
    tenant: Tenant,
    fact: Fact,
    status: str,
    kind: str,
    actor: Actor,
    valid_to: datetime,
    now: datetime,
    reason: str = "",
    source_episode_ids: Sequence[int] = (),
    new_value: str | None = None,
    related_fact: Fact | None = None,
) -> Fact:
    """Take a locked fact out of service with `status`, valid until `valid_to`, and log it as `kind`
    (with the value and the fact that took its place, when one did)."""
    old_status = fact.status
    fact.status = status
    fact.valid_to = valid_to
    fact.updated_at = now
    fact.save(update_fields=["status", "valid_to", "updated_at"])
    change_log(
        tenant=tenant,
        fact=fact,
        kind=kind,
        actor=actor,
        old_value=fact.value,
        new_value=new_value,
        old_status=old_status,
        new_status=status,
        old_confidence=fact.confidence,
        new_confidence=fact.confidence,
        related_fact=related_fact,
        reason=reason,
        source_episode_ids=source_episode_ids,
        at=now,
    )
    return fact


@transaction.atomic
def fact_retract(*, tenant: Tenant, fact_id: uuid.UUID | str, actor: Actor) -> Fact:
    """The fact was wrong: it stops being served and drops out of history (as_of), but is kept."""
    fact = lock_fact(tenant, fact_id)
    if fact.status == FactStatus.RETRACTED:
        return fact
    now = timezone.now()
    return withdraw_locked(
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
    fact = lock_fact(tenant, fact_id)
    if fact.status == FactStatus.EXPIRED:
        return fact
    if fact.status not in LIVE:
        raise Conflict(f"Fact {fact.id} is {fact.status}; only active or pending facts can expire.")
    now = timezone.now()
    return withdraw_locked(
        tenant=tenant,
        fact=fact,
        status=FactStatus.EXPIRED,
        kind=FactChangeKind.EXPIRED,
        actor=actor,
        valid_to=max(at or now, fact.valid_from),
        now=now,
    )


# Facts of what happened stay true when the subject leaves a value behind ("switched from Vim to Emacs").
KEPT_WHEN_LEFT = frozenset({"experiences"})


def _names_left(fact: Fact, *, value: str, version: str | None, context: frozenset[str], subject: str) -> bool:
    """Whether `fact` holds what the subject said they left: the value named as a whole phrase (a single
    word without digits only when the fact shares a word of the statement's context, so that "reviews
    moved from Sam to Ines" expires "Sam reviews my pull requests" and not "Sam is my brother"), or with
    `version`, the name said with another version."""
    if version is not None:
        found = re.search(rf"(?<![\w.]){re.escape(value)} (v?\d+(?:\.\d+)*)(?![\w.]*\d)", fact.value)
        return found is not None and found.group(1) != version
    if not re.search(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", fact.value, re.IGNORECASE):
        return False
    if " " in value or any(ch.isdigit() for ch in value):
        return True
    said = set(terms(fact.statement)) - set(terms(value)) - set(terms(subject))
    return bool(said & context)


@transaction.atomic
def facts_expire_left(
    *,
    tenant: Tenant,
    subject: str,
    value: str,
    context: frozenset[str],
    before: datetime,
    source_episode_id: int,
    actor: Actor,
    version: str | None = None,
) -> int:
    """The subject said they left `value` behind (at `before`, in episode `source_episode_id`): their live
    facts that hold it (_names_left), none of whose sources was said at or after that moment, expire
    then, each with an audited 'expired' change citing the statement. Returns how many expired."""
    live = (
        Fact.objects.filter(subject=subject, status__in=LIVE, valid_from__lt=before)
        .exclude(attribute__in=KEPT_WHEN_LEFT)
        # Said again at or after the statement (or by it): still held.
        .exclude(sources__episode__occurred_at__gte=before)
        .exclude(sources__episode_id=source_episode_id)
        .order_by("valid_from", "id")
    )
    expired = 0
    for fact in live:
        if not _names_left(fact, value=value, version=version, context=context, subject=subject):
            continue
        fact = lock_fact(tenant, fact.id)
        if fact.status not in LIVE:
            continue
        left = value if version is None else f"{value} other than {version}"
        withdraw_locked(
            tenant=tenant,
            fact=fact,
            status=FactStatus.EXPIRED,
            kind=FactChangeKind.EXPIRED,
            actor=actor,
            valid_to=max(before, fact.valid_from),
            now=timezone.now(),
            reason=f"the subject left {left}"[:255],
            source_episode_ids=[source_episode_id],
        )
        expired += 1
    return expired


@transaction.atomic
def facts_decay(*, tenant: Tenant, confidences: Mapping[uuid.UUID, float], actor: Actor) -> int:
    """Lower the confidence of live facts (consolidation's decay), one 'decayed' change per fact.
    Values are clamped to [0, 1] and never raise a confidence; returns how many facts changed."""
    if not confidences:
        return 0
    now = timezone.now()
    facts = list(Fact.objects.select_for_update().filter(id__in=list(confidences), status__in=LIVE).order_by("id"))
    changed: list[Fact] = []
    changes: list[FactChange] = []
    for fact in facts:
        new = min(fact.confidence, max(0.0, min(1.0, float(confidences[fact.id]))))
        if new == fact.confidence:
            continue
        changes.append(
            FactChange.record(
                fact=fact,
                kind=FactChangeKind.DECAYED,
                actor=actor,
                at=now,
                old_value=fact.value,
                new_value=fact.value,
                old_status=fact.status,
                new_status=fact.status,
                old_confidence=fact.confidence,
                new_confidence=new,
            )
        )
        fact.confidence = new
        fact.updated_at = now
        changed.append(fact)
    Fact.objects.bulk_update(changed, ["confidence", "updated_at"])
    FactChange.objects.bulk_create(changes)
    return len(changed)


# A change of value or statement is a correction: the caller has put the fact to the subject and
# vouches for the corrected version (which clears it from the verification list). A change of
# category or confidence alone is bookkeeping, not a confirmation.
CORRECTION_FIELDS = frozenset({"value", "statement"})


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
    value. A real change of the world is a new fact through fact_upsert, not an edit. A correction
    (value or statement) confirms: an active fact's last_confirmed_at moves to now, and a pending
    fact is accepted in its corrected form (`_accept_pending`)."""
    fact = lock_fact(tenant, fact_id)
    if fact.status not in LIVE:
        raise Conflict(f"Fact {fact.id} is {fact.status}; only active or pending facts can be edited.")
    fields = _edit(
        tenant=tenant,
        fact=fact,
        actor=actor,
        value=value,
        statement=statement,
        category=category,
        confidence=confidence,
    )
    if not CORRECTION_FIELDS & set(fields):
        return fact
    if fact.status == FactStatus.PENDING_REVIEW:
        return _accept_pending(
            tenant=tenant,
            fact=fact,
            actor=actor,
            kind=FactChangeKind.CONFIRMED,
            reason="corrected by the caller; the corrected value is accepted.",
            confidence=fact.confidence,
            now=fact.updated_at,
        )
    fact.last_confirmed_at = fact.updated_at
    fact.save(update_fields=["last_confirmed_at"])
    return fact


def _edit(
    *,
    tenant: Tenant,
    fact: Fact,
    actor: Actor,
    value: str | None,
    statement: str | None,
    category: str | None,
    confidence: float | None,
) -> list[str]:
    """Apply an edit to a locked live fact and log it; returns the fields that changed."""
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
            Fact.objects.filter(
                subject=fact.subject, entity=fact.entity, attribute=fact.attribute, value_key=key, status__in=LIVE
            )
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
        return fields
    fact.updated_at = timezone.now()
    fact.save(update_fields=[*fields, "updated_at"])
    if "statement" in fields:
        fact.refresh_from_db(fields=["search_vector"])
    change_log(
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
    return fields


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
    """An operator's decision on a pending fact. Approved, it is accepted (`_accept_pending`: it may
    supersede the active value, or become history if an even newer value is known); rejected, it is
    retracted. `value`/`statement` correct it first."""
    fact = lock_fact(tenant, fact_id)
    if fact.status != FactStatus.PENDING_REVIEW:
        raise Conflict(f"Fact {fact.id} is {fact.status}, not pending_review.")
    now = timezone.now()
    if not approve:
        return withdraw_locked(
            tenant=tenant,
            fact=fact,
            status=FactStatus.RETRACTED,
            kind=FactChangeKind.REVIEW_REJECTED,
            actor=actor,
            valid_to=now,
            now=now,
        )

    if value is not None or statement is not None:
        _edit(tenant=tenant, fact=fact, actor=actor, value=value, statement=statement, category=None, confidence=None)
        # The edit is logged at its own time; the approval comes after it, in the history too.
        now = timezone.now()
    return _accept_pending(
        tenant=tenant,
        fact=fact,
        actor=actor,
        kind=FactChangeKind.REVIEW_APPROVED,
        reason="",
        confidence=fact.confidence,
        now=now,
    )


def _accept_pending(
    *, tenant: Tenant, fact: Fact, actor: Actor, kind: str, reason: str, confidence: float, now: datetime
) -> Fact:
    """A locked pending fact is accepted: by an operator's review, or by the caller confirming or
    correcting it. It enters its timeline as if it had just been upserted with enough confidence (at
    least the review threshold): it may supersede the active value (newer wins, logged on the closed
    fact), or become history if an even newer value is known. Logged as `kind` on the fact."""
    episode_ids = list(FactSource.objects.filter(fact=fact).values_list("episode_id", flat=True))
    old_confidence = fact.confidence
    fact.confidence = max(confidence, tenant.config.fact_review_threshold)
    fact.updated_at = now
    fact.last_confirmed_at = now
    fields = ["confidence", "updated_at", "last_confirmed_at"]
    if kind == FactChangeKind.CONFIRMED:
        fact.confirmation_count += 1
        fields.append("confirmation_count")
    changes: list[ChangeDraft] = []
    if fact.cardinality == Cardinality.SINGLE:
        fact.save(update_fields=fields)
        timeline = timeline_of(tenant, *_slot(fact), exclude=fact.id)
        _, _, changes = place_single(
            tenant=tenant, fact=fact, timeline=timeline, actor=actor, episode_ids=episode_ids, now=now
        )
    else:
        fact.status = FactStatus.ACTIVE
        fact.save(update_fields=["status", *fields])
    change_log(
        tenant=tenant,
        fact=fact,
        kind=kind,
        actor=actor,
        reason=reason,
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
        change.log(tenant=tenant, actor=actor, source_episode_ids=episode_ids, at=now)
    return fact


@transaction.atomic
def fact_revert(*, tenant: Tenant, change_id: int, actor: Actor) -> UpsertResult:
    """Undo a supersession: the superseded value becomes the current one again, as a new fact placed in
    its timeline (so the one-active-value rule and the history hold). One action, one FactChange: a
    `reverted` entry on the reinstated fact naming the fact it displaced (whose history shows it too).
    A revert already carried out (a second click, a concurrent request) changes and logs nothing."""
    change = FactChange.objects.filter(id=change_id).first()
    if change is None:
        raise NotFound(f"Change {change_id} does not exist.")
    if change.kind != FactChangeKind.SUPERSEDED:
        raise Conflict(f"Change {change_id} is a '{change.kind}' change; only a supersession can be reverted.")
    # Read apart rather than joined: Django's join would compare the ids alone, not the tenants.
    loser = Fact.objects.get(id=change.fact_id)
    _lock(tenant, *_slot(loser))
    loser.refresh_from_db(fields=["status"])
    if loser.status != FactStatus.SUPERSEDED:
        raise Conflict(f"Fact {loser.id} is {loser.status}, no longer superseded.")
    episode_ids = list(FactSource.objects.filter(fact=loser).values_list("episode_id", flat=True))
    origin = FactOrigin.OPERATOR if actor.type == ActorType.OPERATOR else FactOrigin.API
    c = fact_prepare(
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
    )
    now = timezone.now()
    live = list(
        Fact.objects.filter(subject=c.subject, entity=c.entity, attribute=c.attribute, status__in=LIVE).order_by(
            "recorded_at"
        )
    )
    same = next((f for f in live if _same_value(f, c)), None)
    if same is not None and same.status == FactStatus.ACTIVE:
        return UpsertResult(fact=same, action="confirmed", previous=None)
    reason = f"revert of change {change.id}."
    if same is not None:  # the value waits for review: vouch for it, as the merge would
        return _confirm(tenant, same, c, actor, reason, now)
    cardinality = _resolve_cardinality(c, live)
    timeline = timeline_of(tenant, *_slot(c)) if cardinality == Cardinality.SINGLE else []
    vector = list(loser.embedding) if loser.embedding is not None else embed_statements([c.statement])[0]
    result, changes = _insert(
        tenant=tenant, c=c, vector=vector, actor=actor, cardinality=cardinality, timeline=timeline, now=now
    )
    displaced = result.previous
    for draft in changes:
        if displaced is None or draft.fact.id != displaced.id:  # the displaced fact's entry is the revert's
            draft.log(tenant=tenant, actor=actor, source_episode_ids=episode_ids, at=now)
    change_log(
        tenant=tenant,
        fact=result.fact,
        kind=FactChangeKind.REVERTED,
        actor=actor,
        reason=reason,
        old_value=displaced.value if displaced is not None else None,
        new_value=result.fact.value,
        new_status=result.fact.status,
        new_confidence=result.fact.confidence,
        related_fact=displaced,
        source_episode_ids=episode_ids,
        observed_at=c.observed_at,
        at=now,
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
    return Fact.objects.filter(id__in=ids).update(use_count=F("use_count") + 1, last_used_at=timezone.now())

"""Semantic memory: deduplicated facts with confidence, provenance and validity, and their history."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from core.embedding import EMBEDDING_DIM
from episodic.models import Episode
from tenants.models import TenantModel

if TYPE_CHECKING:
    from semantic.types import Actor


class FactCategory(models.TextChoices):
    PREFERENCES = "preferences"
    TECHNICAL_ENVIRONMENT = "technical_environment"
    KNOWN_ISSUES = "known_issues"
    CONTACT_INFO = "contact_info"
    BUSINESS_CONTEXT = "business_context"
    OTHER = "other"


class FactStatus(models.TextChoices):
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    EXPIRED = "expired"
    PENDING_REVIEW = "pending_review"


class Cardinality(models.TextChoices):
    SINGLE = "single"
    MULTI = "multi"


class FactOrigin(models.TextChoices):
    EXTRACTED = "extracted"
    API = "api", "API"
    OPERATOR = "operator"


class Fact(TenantModel):
    """What Engram believes about an entity: (entity, attribute, value) and one sentence saying it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Whose memory this is (the subject whose episodes or API call produced it), exactly as the tenant
    # wrote it, or "" for the tenant's own knowledge: what erasure and the router's "the subject's
    # facts" select on, and part of the fact's slot. `entity` is what the fact is about (often the
    # subject, then in its normal form: entities are compared loosely, subjects never).
    subject = models.CharField(max_length=255, blank=True, default="")
    entity = models.CharField(max_length=255)
    attribute = models.CharField(max_length=100)
    value = models.TextField()
    value_key = models.CharField(max_length=255)
    statement = models.TextField()
    category = models.CharField(max_length=64, default=FactCategory.OTHER)
    cardinality = models.CharField(max_length=8, choices=Cardinality.choices, default=Cardinality.SINGLE)
    confidence = models.FloatField(default=0.8)
    status = models.CharField(max_length=16, choices=FactStatus.choices, default=FactStatus.ACTIVE)
    valid_from = models.DateTimeField(default=timezone.now)
    valid_to = models.DateTimeField(null=True, blank=True)
    recorded_at = models.DateTimeField(default=timezone.now)
    last_confirmed_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    use_count = models.PositiveIntegerField(default=0)
    confirmation_count = models.PositiveIntegerField(default=1)
    origin = models.CharField(max_length=16, choices=FactOrigin.choices, default=FactOrigin.API)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False
    )
    # Set when the value names another entity: the fact is then also an edge entity -attribute-> object_entity.
    object_entity = models.CharField(max_length=255, null=True, blank=True)
    source_episodes: models.ManyToManyField[Episode, FactSource] = models.ManyToManyField(
        Episode, through="FactSource", related_name="facts", blank=True
    )
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    search_vector = models.GeneratedField(
        expression=SearchVector("statement", config="english"),
        output_field=SearchVectorField(),
        db_persist=True,
    )
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            # A fact's slot is (subject, entity, attribute): one subject's memory never merges with
            # another's (DESIGN.md invariant 12). At most one active value of a single-valued attribute
            # per slot; one row per value of a multi-valued one.
            models.UniqueConstraint(
                fields=("tenant", "subject", "entity", "attribute"),
                condition=models.Q(status="active", cardinality="single"),
                name="uniq_active_single_fact",
            ),
            models.UniqueConstraint(
                fields=("tenant", "subject", "entity", "attribute", "value_key"),
                condition=models.Q(status__in=["active", "pending_review"]),
                name="uniq_live_fact_value",
            ),
            models.CheckConstraint(
                condition=models.Q(confidence__gte=0) & models.Q(confidence__lte=1), name="fact_confidence_range"
            ),
        ]
        indexes = [
            models.Index(fields=("tenant", "entity", "attribute", "status"), name="fact_entity_attr"),
            models.Index(fields=("tenant", "subject", "status"), name="fact_subject_status"),
            models.Index(fields=("tenant", "status", "-recorded_at"), name="fact_status_recorded"),
            models.Index(fields=("tenant", "object_entity"), name="fact_object_entity"),
            GinIndex(fields=("tenant", "search_vector"), name="fact_fts_gin"),
            HnswIndex(
                name="fact_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]

    # What a fact says, how sure it is and where it came from: a candidate's fields of the same names
    # make a new fact (semantic.services), a fact's make its copy.
    STATEMENT_FIELDS = (
        "subject", "entity", "attribute", "value", "value_key", "statement", "category", "confidence", "origin",
    )  # fmt: skip
    # What else a copy keeps: its place in the timeline, its links and its embedding. Use and
    # confirmation counts start afresh.
    COPIED_FIELDS = (
        "cardinality", "status", "valid_from", "valid_to", "recorded_at", "last_confirmed_at", "superseded_by_id",
        "object_entity", "embedding", "updated_at",
    )  # fmt: skip

    def __str__(self) -> str:
        return f"{self.entity}.{self.attribute} = {self.value}"

    def copy(self, **fields: Any) -> Fact:
        """An unsaved fact of the same tenant saying the same, with `fields` changed."""
        kept = {name: getattr(self, name) for name in (*self.STATEMENT_FIELDS, *self.COPIED_FIELDS)}
        return Fact(tenant_id=self.tenant_id, **{**kept, **fields})


class FactSource(TenantModel):
    """Provenance: which episodes a fact came from (kept when the fact changes)."""

    fact = models.ForeignKey(Fact, on_delete=models.DO_NOTHING, related_name="sources", db_constraint=False)
    episode = models.ForeignKey(Episode, on_delete=models.DO_NOTHING, related_name="fact_sources", db_constraint=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant", "fact", "episode"), name="uniq_fact_source")]
        indexes = [models.Index(fields=("tenant", "episode"), name="factsource_episode")]

    def __str__(self) -> str:
        return f"{self.fact_id} <- {self.episode_id}"


class FactChangeKind(models.TextChoices):
    CREATED = "created"
    CONFIRMED = "confirmed"
    SUPERSEDED = "superseded"
    RETRACTED = "retracted"
    EXPIRED = "expired"
    EDITED = "edited"
    DECAYED = "decayed"
    REVIEW_APPROVED = "review_approved"
    REVIEW_REJECTED = "review_rejected"
    REVERTED = "reverted"
    # Filed under another name: the fact moved to the entity its name is an alias of (semantic.aliases).
    MERGED = "merged"


class ActorType(models.TextChoices):
    CONSOLIDATION = "consolidation"
    API_KEY = "api_key", "API key"
    OPERATOR = "operator"
    SYSTEM = "system"


class FactChange(TenantModel):
    """The conflict audit log: every change to a fact, with who or what made it and why."""

    fact = models.ForeignKey(Fact, on_delete=models.DO_NOTHING, related_name="changes", db_constraint=False)
    kind = models.CharField(max_length=20, choices=FactChangeKind.choices)
    old_value = models.TextField(null=True, blank=True)
    new_value = models.TextField(null=True, blank=True)
    old_status = models.CharField(max_length=16, null=True, blank=True)
    new_status = models.CharField(max_length=16, null=True, blank=True)
    old_confidence = models.FloatField(null=True, blank=True)
    new_confidence = models.FloatField(null=True, blank=True)
    # The other fact in a supersession or revert (the newer or the reinstated one).
    related_fact = models.ForeignKey(
        Fact, null=True, blank=True, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False
    )
    reason = models.TextField(blank=True, default="")
    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    actor_id = models.CharField(max_length=255, blank=True, default="")
    source_episode_ids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # When the value was observed in the world (created and confirmed changes): the merge places a
    # late-arriving value between these observations, so that the latest observation wins at every time.
    observed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=("tenant", "fact", "created_at"), name="factchange_fact_time"),
            models.Index(fields=("tenant", "kind", "-created_at"), name="factchange_kind_time"),
            models.Index(fields=("tenant", "-created_at"), name="factchange_time"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.fact_id}"

    @classmethod
    def record(
        cls,
        *,
        fact: Fact,
        kind: str,
        actor: Actor,
        reason: str = "",
        source_episode_ids: Iterable[int] = (),
        at: datetime | None = None,
        **values: Any,
    ) -> FactChange:
        """An unsaved entry of the audit: `values` are the old_/new_ fields, related_fact and
        observed_at; the actor's own reason follows `reason`."""
        return cls(
            tenant_id=fact.tenant_id,
            fact=fact,
            kind=kind,
            reason=" ".join(p for p in (reason, actor.reason) if p),
            actor_type=actor.type,
            actor_id=actor.id,
            source_episode_ids=sorted(set(source_episode_ids)),
            created_at=at or timezone.now(),
            **values,
        )

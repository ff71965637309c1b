"""Procedural memory: behavioural rules (trigger -> behaviour), their outcomes and their decisions.

Each edit of a procedure is a new row: the versions of one rule share a `lineage`, exactly one is
current, and the statistics on a row are those its version earned.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone
from pgvector.django import VectorField

from core.embedding import EMBEDDING_DIM
from episodic.models import Episode
from tenants.models import TenantModel


class ProcedureSource(models.TextChoices):
    INSTRUCTION = "instruction"
    EXPERIENCE = "experience"
    FINE_TUNING = "fine_tuning"


class ProcedureStatus(models.TextChoices):
    CANDIDATE = "candidate"
    ACTIVE = "active"
    DEPRECATED = "deprecated"


class Procedure(TenantModel):
    lineage = models.UUIDField(default=uuid.uuid4)
    version = models.PositiveIntegerField(default=1)
    is_current = models.BooleanField(default=True)
    superseded_by = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False
    )
    # "" applies to every agent of the tenant.
    agent = models.CharField(max_length=255, blank=True, default="")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    trigger = models.JSONField(default=dict, blank=True)
    trigger_text = models.TextField(blank=True, default="")
    trigger_embedding = VectorField(dimensions=EMBEDDING_DIM, null=True, blank=True)
    behaviour = models.TextField()
    steps = models.JSONField(default=list, blank=True)
    source = models.CharField(max_length=16, choices=ProcedureSource.choices, default=ProcedureSource.INSTRUCTION)
    status = models.CharField(max_length=16, choices=ProcedureStatus.choices, default=ProcedureStatus.ACTIVE)
    created_by = models.CharField(max_length=255, blank=True, default="")
    evidence = models.JSONField(default=dict, blank=True)
    # The mined pattern a discovered procedure came from, so discovery never proposes it twice.
    discovery_key = models.CharField(max_length=64, blank=True, default="")
    # Statistics of this version. `window_*` count since it was last (re)activated: deprecation judges
    # those, so that an operator's reactivation gives the rule a fresh hearing.
    applications = models.PositiveIntegerField(default=0)
    successes = models.PositiveIntegerField(default=0)
    failures = models.PositiveIntegerField(default=0)
    not_applied = models.PositiveIntegerField(default=0)
    window_successes = models.PositiveIntegerField(default=0)
    window_failures = models.PositiveIntegerField(default=0)
    confidence = models.FloatField(default=0.0)
    last_applied_at = models.DateTimeField(null=True, blank=True)
    status_changed_at = models.DateTimeField(default=timezone.now)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("tenant", "lineage", "version"), name="uniq_procedure_version"),
            models.UniqueConstraint(
                fields=("tenant", "lineage"), condition=models.Q(is_current=True), name="uniq_procedure_current"
            ),
        ]
        indexes = [
            models.Index(fields=("tenant", "is_current", "status"), name="procedure_current_status"),
            models.Index(fields=("tenant", "-created_at", "-id"), name="procedure_created"),
            models.Index(
                fields=("tenant", "discovery_key"), condition=~models.Q(discovery_key=""), name="procedure_discovery"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name}: {self.behaviour}"


class ProcedureOutcome(TenantModel):
    """One report that a procedure was (or was not) applied, and how it went."""

    procedure = models.ForeignKey(
        Procedure, on_delete=models.DO_NOTHING, related_name="outcomes", db_index=False, db_constraint=False
    )
    session_external_id = models.CharField(max_length=255, blank=True, default="")
    episode = models.ForeignKey(
        Episode, null=True, blank=True, on_delete=models.DO_NOTHING, related_name="+", db_constraint=False
    )
    applied = models.BooleanField()
    success = models.BooleanField(null=True, blank=True)
    signal = models.FloatField(null=True, blank=True)
    recorded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=("tenant", "procedure", "episode"),
                condition=models.Q(episode__isnull=False),
                name="uniq_procedure_outcome_episode",
            )
        ]
        indexes = [
            models.Index(fields=("tenant", "procedure", "-recorded_at"), name="outcome_procedure_time"),
            models.Index(fields=("tenant", "session_external_id"), name="outcome_session"),
        ]

    def __str__(self) -> str:
        return f"procedure {self.procedure_id}: applied={self.applied} success={self.success}"


class ProcedureEventKind(models.TextChoices):
    CREATED = "created"
    DISCOVERED = "discovered"
    EDITED = "edited"
    APPROVED = "approved"
    REJECTED = "rejected"
    DEPRECATED = "deprecated"
    REACTIVATED = "reactivated"


class ProcedureEvent(TenantModel):
    """A decision about a procedure, with who made it and the figures it was made on."""

    procedure = models.ForeignKey(
        Procedure, on_delete=models.DO_NOTHING, related_name="events", db_index=False, db_constraint=False
    )
    lineage = models.UUIDField()
    kind = models.CharField(max_length=16, choices=ProcedureEventKind.choices)
    actor = models.CharField(max_length=255)
    reason = models.TextField(blank=True, default="")
    figures = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=("tenant", "lineage", "created_at"), name="procevent_lineage_time"),
            models.Index(fields=("tenant", "procedure"), name="procevent_procedure"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} procedure {self.procedure_id} by {self.actor}"

"""Consolidation and lifecycle: runs and their watermark, decay anchors, archive manifests."""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from tenants.models import TenantModel


class RunTrigger(models.TextChoices):
    SESSION_ENDED = "session_ended"
    ENTITY_THRESHOLD = "entity_threshold"
    SWEEP = "sweep"
    MANUAL = "manual"


class RunStatus(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"


class ConsolidationRun(TenantModel):
    """One consolidation: why it ran, what it read, what it wrote and what it cost.

    A task redelivered after a crash continues the run of its Celery task id, so counts add up."""

    trigger = models.CharField(max_length=20, choices=RunTrigger.choices)
    reason = models.TextField(blank=True, default="")
    # Whose episodes set it off (the session's or the entity threshold's subject); erasure clears it.
    subject = models.CharField(max_length=255, blank=True, default="")
    session_external_id = models.CharField(max_length=255, blank=True, default="")
    entity = models.CharField(max_length=255, blank=True, default="")
    task_id = models.CharField(max_length=255, blank=True, default="")
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.RUNNING)
    extractor = models.CharField(max_length=100, blank=True, default="")
    first_episode_id = models.BigIntegerField(null=True, blank=True)
    last_episode_id = models.BigIntegerField(null=True, blank=True)
    episodes_read = models.PositiveIntegerField(default=0)
    candidates = models.PositiveIntegerField(default=0)
    facts_created = models.PositiveIntegerField(default=0)
    facts_confirmed = models.PositiveIntegerField(default=0)
    facts_superseded = models.PositiveIntegerField(default=0)
    facts_pending = models.PositiveIntegerField(default=0)
    candidates_rejected = models.PositiveIntegerField(default=0)
    summaries_written = models.PositiveIntegerField(default=0)
    llm_calls = models.PositiveIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cache_read_tokens = models.PositiveIntegerField(default=0)
    cost_usd = models.FloatField(default=0.0)
    # Malformed or partial extractor answers, each skipped: the error and figures, never an excerpt.
    problems = models.JSONField(default=list, blank=True)
    attempts = models.PositiveSmallIntegerField(default=1)
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=("tenant", "task_id"), condition=~models.Q(task_id=""), name="uniq_run_task_id"
            )
        ]
        indexes = [
            models.Index(fields=("tenant", "-created_at"), name="run_tenant_created"),
            models.Index(fields=("tenant", "status", "-created_at"), name="run_tenant_status"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.trigger}, {self.status})"


class ConsolidationWatermark(TenantModel):
    """Which episodes of the tenant have been consolidated: every id <= `last_episode_id`, plus the
    ids in `done_above` (consolidated, but above a possible gap left by a transaction still open)."""

    last_episode_id = models.BigIntegerField(default=0)
    done_above = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # max(done_above) when recorded, and the transactions of this database then in progress: once
    # all of them have ended, no id below can still commit and done_above folds in.
    pending_last_id = models.BigIntegerField(null=True, blank=True)
    pending_xids = ArrayField(models.BigIntegerField(), default=list, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant",), name="uniq_watermark_tenant")]

    def __str__(self) -> str:
        return f"watermark {self.tenant_id} @ {self.last_episode_id}"

    def is_done(self, episode_id: int) -> bool:
        return episode_id <= self.last_episode_id or episode_id in set(self.done_above)


class FactDecayAnchor(TenantModel):
    """The confidence a fact had when last confirmed: decay is computed from it, so running the daily
    job twice (or late) gives the same answer instead of compounding."""

    # One anchor per fact is uniq_decay_anchor_fact (tenant, fact); a unique key on fact alone could not
    # be distributed.
    fact = models.ForeignKey(
        "semantic.Fact", on_delete=models.DO_NOTHING, related_name="+", db_index=False, db_constraint=False
    )
    anchor_confidence = models.FloatField()
    anchor_at = models.DateTimeField()
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant", "fact"), name="uniq_decay_anchor_fact")]

    def __str__(self) -> str:
        return f"anchor {self.fact_id} {self.anchor_confidence:.2f}@{self.anchor_at:%Y-%m-%d}"


class ArchiveManifest(TenantModel):
    """One cold-storage file: a tenant's archived episodes of one month, gzip JSONL."""

    month = models.CharField(max_length=7)  # YYYY-MM of occurred_at
    path = models.CharField(max_length=500)
    episode_count = models.PositiveIntegerField(default=0)
    bytes = models.PositiveBigIntegerField(default=0)
    sha256 = models.CharField(max_length=64)
    subjects = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    first_occurred_at = models.DateTimeField(null=True, blank=True)
    last_occurred_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant", "month"), name="uniq_archive_month")]

    def __str__(self) -> str:
        return f"{self.month}: {self.episode_count} episodes"

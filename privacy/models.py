"""Erasure requests: what a data subject asks for, and the audit that stays once it is done."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from tenants.models import TenantModel


class ErasureStatus(models.TextChoices):
    RECEIVED = "received"
    EXECUTING = "executing"
    VERIFYING = "verifying"
    DONE = "done"
    FAILED = "failed"


class ErasureRequest(TenantModel):
    """A right-to-erasure request. `subject` is held only until the erasure is done; the audit keeps
    `subject_hash` (SHA-256 of tenant id and subject), never the id itself."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subject = models.CharField(max_length=255, blank=True, default="")
    subject_hash = models.CharField(max_length=64)
    requested_by = models.CharField(max_length=255, blank=True, default="")
    reason = models.TextField(blank=True, default="")
    status = models.CharField(max_length=16, choices=ErasureStatus.choices, default=ErasureStatus.RECEIVED)
    deadline = models.DateTimeField()
    counts = models.JSONField(default=dict, blank=True)
    verification = models.JSONField(default=dict, blank=True)
    receipt = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The table it had in consolidation, where it was created (privacy/migrations/0001_initial.py).
        db_table = "consolidation_erasurerequest"
        indexes = [
            models.Index(fields=("tenant", "status", "created_at"), name="erasure_tenant_status"),
            models.Index(fields=("tenant", "subject_hash"), name="erasure_tenant_subject"),
        ]

    def __str__(self) -> str:
        return f"erasure {self.pk} ({self.status})"

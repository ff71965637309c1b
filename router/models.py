"""Traces of context requests and the feedback on them: what was offered, what was used, the outcome."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from core.jsonb import JSONBField, RowsField
from tenants.models import TenantModel


class FeedbackOutcome(models.TextChoices):
    SUCCESS = "success"
    FAILURE = "failure"
    UNKNOWN = "unknown"


class ContextTrace(TenantModel):
    """One POST /v1/context: the request, every item offered (with score parts and tokens), the items
    considered but left out, the budgets and the latency. The trajectory a learned policy trains on.
    Its documents are encoded by orjson (core.jsonb): one is written with every context request."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    subject = models.CharField(max_length=255)
    session = models.CharField(max_length=255, blank=True, default="")
    agent = models.CharField(max_length=255, blank=True, default="")
    query = models.TextField(blank=True, default="")
    request = JSONBField(default=dict)
    policy = models.CharField(max_length=100)
    budgets = JSONBField(default=dict)
    tokens = JSONBField(default=dict)
    total_tokens = models.PositiveIntegerField(default=0)
    offered = RowsField(default=list)
    offered_ids = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    considered = RowsField(default=list)
    latency_ms = models.FloatField(default=0.0)
    # While a value model is on trial (router.trial): {"model": its label, "arm": "model" or "formula",
    # the one served, "share": the tenant's trial share}; empty otherwise.
    trial = JSONBField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [
            models.Index(fields=("tenant", "-created_at"), name="trace_tenant_created"),
            models.Index(fields=("tenant", "subject", "-created_at"), name="trace_subject_created"),
            models.Index(fields=("tenant", "session", "-created_at"), name="trace_session_created"),
        ]

    def __str__(self) -> str:
        return f"trace {self.pk}"


class ContextFeedback(TenantModel):
    """What the caller used of one context and how the turn went. One per trace."""

    trace = models.ForeignKey(ContextTrace, on_delete=models.DO_NOTHING, related_name="feedback", db_constraint=False)
    # Copied from the trace so that hit rates per subject and session are one indexed aggregate.
    subject = models.CharField(max_length=255)
    session = models.CharField(max_length=255, blank=True, default="")
    used_item_ids = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    offered_count = models.PositiveIntegerField()
    used_count = models.PositiveIntegerField()
    outcome = models.CharField(max_length=16, choices=FeedbackOutcome.choices, default=FeedbackOutcome.UNKNOWN)
    signal = models.FloatField(null=True, blank=True)
    asked_to_repeat = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = verbose_name_plural = "context feedback"  # an uncountable noun: no "feedbacks"
        constraints = [models.UniqueConstraint(fields=("tenant", "trace"), name="uniq_feedback_per_trace")]
        indexes = [
            models.Index(fields=("tenant", "subject", "-created_at"), name="feedback_subject_created"),
            models.Index(fields=("tenant", "session", "-created_at"), name="feedback_session_created"),
            models.Index(fields=("tenant", "-created_at"), name="feedback_tenant_created"),
        ]

    def __str__(self) -> str:
        return f"feedback on {self.trace_id}"


class ValueModelState(models.TextChoices):
    # Trained, estimated, not (yet) shown to beat the formula: the formula serves.
    TRAINED = "trained"
    # Not shown worse than the formula: served on a share of the requests, interleaved with the formula
    # and logged, until the trial's estimate decides (router.learning.value_model_trial).
    TRIAL = "trial"
    SERVING = "serving"
    # Replaced by a newer serving model.
    RETIRED = "retired"
    # Measured below the formula's interval while it served, and switched off by the watch.
    ROLLED_BACK = "rolled_back"
    # Switched off by an operator.
    DISABLED = "disabled"


class ValueModel(TenantModel):
    """One tenant's learned value of a candidate (the chance the agent uses it), a version of it: the
    coefficients of a regularised logistic regression over router.features, what it was trained on, its
    off-policy estimate against the formula, and its state. A model is data: rows are never changed
    but for their state; a new training makes a new version."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    version = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=ValueModelState.choices, default=ValueModelState.TRAINED)
    features = models.JSONField(default=list)
    coefficients = models.JSONField(default=list)
    intercept = models.FloatField(default=0.0)
    # Standardisation of each feature before the coefficients apply.
    means = models.JSONField(default=list)
    scales = models.JSONField(default=list)
    trained_on = models.JSONField(default=dict)
    estimate = models.JSONField(default=dict)
    measured = models.JSONField(default=dict)
    # The trial's estimate (router.learning.value_model_trial), on the contexts logged since it began.
    trial = models.JSONField(default=dict, blank=True)
    note = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    state_changed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=("tenant", "version"), name="uniq_value_model_version"),
            models.UniqueConstraint(
                fields=("tenant",), condition=models.Q(state="serving"), name="uniq_serving_value_model"
            ),
            models.UniqueConstraint(
                fields=("tenant",), condition=models.Q(state="trial"), name="uniq_trial_value_model"
            ),
        ]
        indexes = [models.Index(fields=("tenant", "state", "-version"), name="value_model_state")]

    def __str__(self) -> str:
        return f"value model v{self.version} ({self.state})"

    @property
    def label(self) -> str:
        return f"value-v{self.version}"

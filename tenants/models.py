"""Tenants, their API keys and operators, and the base every tenant-owned model builds on."""

from __future__ import annotations

import dataclasses
import hashlib
import secrets
import uuid
from typing import Any, Self, TypeVar

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from tenants.scope import check_within_scope, require_scope


@dataclasses.dataclass(frozen=True)
class TenantSettings:
    """A tenant's tunables. Stored as JSON on the tenant; anything missing takes these defaults."""

    # Router budgets (tokens).
    budget_procedural: int = 800
    budget_semantic: int = 1200
    episodic_fraction: float = 0.30
    episodic_cap: int = 15_000
    conversation_reserve_fraction: float = 0.5
    budget_working: int = 600
    # Semantic memory.
    fact_review_threshold: float = 0.5
    dedupe_similarity: float = 0.92
    decay_half_life_days: dict[str, float] = dataclasses.field(
        default_factory=lambda: {
            "preferences": 180.0,
            "technical_environment": 120.0,
            "known_issues": 30.0,
            "contact_info": 365.0,
            "business_context": 180.0,
            "other": 90.0,
        }
    )
    forget_after_days: int = 365
    confidence_floor: float = 0.1
    extra_categories: list[str] = dataclasses.field(default_factory=list)
    # Episodic memory.
    retention_days: int = 90
    scratchpad_ttl_seconds: int = 24 * 3600
    entity_dictionary: list[str] = dataclasses.field(default_factory=list)
    topic_dictionary: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    # Consolidation triggers.
    entity_trigger_episodes: int = 5
    entity_trigger_window_days: int = 7
    # The sweep consolidates any backlog older than this even when no trigger fired.
    consolidation_max_delay_minutes: int = 60
    # Procedural memory.
    procedure_min_applications: int = 10
    procedure_deprecate_below: float = 0.4
    discovery_min_support: float = 0.3
    discovery_min_confidence: float = 0.7
    discovery_min_lift: float = 1.5
    discovery_min_sessions: int = 20
    procedure_semantic_threshold: float = 0.5
    # API.
    rate_limit_per_minute: int = 6000
    # The router's memory control (docs/router.md): the chance of one swap at the budget's margin, logged
    # with its probabilities (0 to 0.2), and whether a learned value may serve once it beats the formula.
    exploration: float = 0.0
    learned_value: bool = True
    # The share of requests a value model on trial serves, interleaved with the formula (0 to 0.5, see
    # router.trial): 0.2 exposes a fifth of the requests to a model not yet shown better, and a model's
    # item weighs at most 5 in the trial's estimate.
    trial_share: float = 0.2
    # Keep sentence vectors before exploring (Tenant.keeps_sentence_vectors), so that a tenant about to
    # explore has them from its first request; the formula never reads them.
    sentence_vectors: bool = False

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> TenantSettings:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in (data or {}).items() if k in known})


class Tenant(models.Model):
    """A customer organisation: the isolation boundary. Not itself under row-level security."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    active = models.BooleanField(default=True)
    settings = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Whether the tenant has ever had an entity alias (episodic.aliases): searches of a tenant without
    # one skip the alias lookup. Read from the row each request loads, so never stale on the read path.
    has_entity_aliases = models.BooleanField(default=False)
    # The tenant's learned value model that serves (router.models.ValueModel, state serving), or null: the
    # formula. Kept on the row every request loads, so choosing the value costs no query.
    serving_value_model = models.UUIDField(null=True, blank=True)
    # The tenant's value model on trial (state trial), served on a share of the requests; null: none.
    trial_value_model = models.UUIDField(null=True, blank=True)

    class Meta:
        ordering = ("slug",)

    def __str__(self) -> str:
        return self.slug

    @property
    def config(self) -> TenantSettings:
        return TenantSettings.from_json(self.settings)

    @property
    def keeps_sentence_vectors(self) -> bool:
        """Whether the tenant's passages get the vectors of their sentences (episodic.PassageSentence). Only
        a learned value reads them (router.value.reads_sentences), so only a tenant that explores (its traces
        are what a model learns from), has a value model serving or on trial, or is set to keep them
        (`sentence_vectors`, ahead of exploring) keeps them: the others pay
        neither the embedding (1.4 times a passage's own, in the write's request) nor the storage."""
        config = self.config
        return (
            config.sentence_vectors
            or config.exploration > 0
            or self.serving_value_model is not None
            or self.trial_value_model is not None
        )


_M = TypeVar("_M", bound=models.Model)


class TenantQuerySet(models.QuerySet[_M, _M]):
    # The tenants the manager limited this queryset to (`tenant_id = ` or `IN`); None: no limit.
    _scoped_to: frozenset[uuid.UUID] | None = None

    def _clone(self) -> Self:
        clone: Self = super()._clone()  # type: ignore[misc]  # not in the stubs
        clone._scoped_to = self._scoped_to
        return clone

    def _either(self, other: Any, combined: Self) -> Self:
        # `a | b` is limited to the tenants of both only when both were limited alike.
        if combined is not self and combined is not other and getattr(other, "_scoped_to", None) != self._scoped_to:
            combined._scoped_to = None
        return combined

    def __or__(self, other: Any) -> Self:
        return self._either(other, super().__or__(other))

    def __xor__(self, other: Any) -> Self:
        return self._either(other, super().__xor__(other))  # type: ignore[misc]  # not in the stubs

    def limit_to(self, tenant_ids: frozenset[uuid.UUID]) -> Self:
        if len(tenant_ids) == 1:
            limited = self.filter(tenant_id=next(iter(tenant_ids)))
        else:
            limited = self.filter(tenant_id__in=sorted(tenant_ids))
        limited._scoped_to = tenant_ids
        return limited

    def for_tenant(self, tenant: Tenant | uuid.UUID) -> Self:
        """Assert that the rows are `tenant`'s: the manager has already limited a one-tenant scope to
        it, so this adds nothing there; it narrows a scope of several tenants and filters under
        `scopes_disabled()`. A tenant outside the active scope raises ScopeError."""
        tenant_id = tenant if isinstance(tenant, uuid.UUID) else tenant.id
        check_within_scope(self.model._meta.label, tenant_id)
        if self._scoped_to == frozenset({tenant_id}):
            return self
        return self.limit_to(frozenset({tenant_id}))


class TenantManager(models.Manager[_M]):
    """Applies the active tenant scope to every query it builds, and fails closed: no query is built
    outside a scope. Under `scopes_disabled()` it neither refuses nor filters."""

    _queryset_class: type[TenantQuerySet[Any]] = TenantQuerySet

    def get_queryset(self) -> TenantQuerySet[_M]:
        tenant_ids = require_scope(self.model._meta.label)
        queryset: TenantQuerySet[_M] = super().get_queryset()  # type: ignore[assignment]
        return queryset if tenant_ids is None else queryset.limit_to(tenant_ids)

    def for_tenant(self, tenant: Tenant | uuid.UUID) -> TenantQuerySet[_M]:
        return self.get_queryset().for_tenant(tenant)


class TenantModel(models.Model):
    """Base of every tenant-owned row. Each concrete model also needs `rls.enable_rls()` in its
    migration and at least one index or unique constraint led by `tenant`."""

    # No single-column index: the composite indexes of each model lead with tenant_id.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)

    objects = TenantManager()

    class Meta:
        abstract = True

    def _do_update(
        self, base_qs: Any, using: Any, pk_val: Any, values: Any, update_fields: Any, forced_update: bool
    ) -> bool:
        """`save()` of an existing row names its tenant (on Citus that routes the UPDATE to one shard)
        and never writes tenant_id, the distribution column, which does not change."""
        values = [value for value in values if value[0].attname != "tenant_id"]
        return bool(
            super()._do_update(
                base_qs.filter(tenant_id=self.tenant_id), using, pk_val, values, update_fields, forced_update
            )
        )

    def _own_row(self, using: str | None = None) -> models.QuerySet[Self]:
        return type(self)._base_manager.db_manager(using).filter(tenant_id=self.tenant_id)

    def refresh_from_db(
        self, using: str | None = None, fields: Any = None, from_queryset: models.QuerySet[Self] | None = None
    ) -> None:
        """Reload (or load a deferred field) through a query that names the tenant: Django's own
        selects by primary key alone."""
        if from_queryset is None and "tenant_id" in self.__dict__:
            from_queryset = self._own_row(using)
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)

    def delete(self, using: Any = None, keep_parents: bool = False) -> tuple[int, dict[str, int]]:
        """Delete through a queryset that names the tenant: Django deletes an instance by primary key
        alone (`WHERE id IN (%s)`). Foreign keys between tenant tables cascade nothing on the Django
        side (DO_NOTHING), so this is one statement; whoever deletes a row deletes its dependents first."""
        if self.pk is None:
            raise ValueError(f"{self._meta.object_name} object can't be deleted because its id is None.")
        deleted = self._own_row(using).filter(pk=self.pk).delete()
        self.pk = None
        return deleted


class TenantMembership(models.Model):
    """An operator (staff user) and a tenant they may see in the admin. Superusers see every tenant."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tenant_memberships")
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="memberships")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant", "user"), name="uniq_membership")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.tenant}"


class ApiKeyScope(models.TextChoices):
    READ = "read"
    WRITE = "write"
    ADMIN = "admin"


KEY_PREFIX_LEN = 12


def _scopes_valid(scopes: Any) -> bool:
    return (
        isinstance(scopes, list)
        and bool(scopes)
        and all(isinstance(s, str) and s in ApiKeyScope.values for s in scopes)
    )


def validate_scopes(scopes: Any) -> None:
    if not _scopes_valid(scopes):
        raise ValidationError(
            {"scopes": f"A non-empty list of scopes out of {', '.join(ApiKeyScope.values)}; got {scopes!r}."}
        )


def hash_key(raw: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiKey(TenantModel):
    """Shown once at creation; stored as a lookup prefix and a SHA-256 hash."""

    name = models.CharField(max_length=200)
    prefix = models.CharField(max_length=KEY_PREFIX_LEN, unique=True)
    key_hash = models.CharField(max_length=64)
    scopes = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=200, blank=True)

    class Meta:
        verbose_name = "API key"
        indexes = [models.Index(fields=("tenant", "created_at"), name="apikey_tenant_created")]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @staticmethod
    def generate() -> tuple[str, str, str]:
        """A new raw key with its prefix and hash: `eng_<prefix>_<secret>`."""
        prefix = secrets.token_hex(KEY_PREFIX_LEN // 2)
        raw = f"eng_{prefix}_{secrets.token_urlsafe(32)}"
        return raw, prefix, hash_key(raw)

    def clean(self) -> None:
        super().clean()
        validate_scopes(self.scopes)

    def has_scope(self, scope: str) -> bool:
        # Exact membership in a list of known scopes: a string or a malformed list grants nothing.
        granted = set(self.scopes) if _scopes_valid(self.scopes) else set()
        return scope in granted or ApiKeyScope.ADMIN in granted


class IdempotencyRecord(TenantModel):
    """The first response to a POST carrying an Idempotency-Key, replayed for a repeat of it."""

    key = models.CharField(max_length=255)
    method = models.CharField(max_length=10)
    path = models.CharField(max_length=500)
    request_hash = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField()
    # The subjects the request was about, so that erasure can find stored bodies that mention them.
    subjects = ArrayField(models.CharField(max_length=255), default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant", "key"), name="uniq_idempotency_key")]
        indexes = [models.Index(fields=("tenant", "created_at"), name="idem_tenant_created")]

    def __str__(self) -> str:
        return f"{self.method} {self.path} [{self.key}]"


class IdempotencyTombstone(TenantModel):
    """What stays of an idempotency record erased with its subject: a hash of the key, so that a replay
    of the erased request is refused instead of writing the subject's data again. No key, no content."""

    key_hash = models.CharField(max_length=64)
    # The erased record's, so that the tombstone is purged when the record would have been.
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant", "key_hash"), name="uniq_idempotency_tombstone")]
        indexes = [models.Index(fields=("tenant", "created_at"), name="idem_tomb_tenant_created")]

    def __str__(self) -> str:
        return f"erased key {self.key_hash[:12]}"

    @staticmethod
    def hash_key(tenant_id: uuid.UUID, key: str) -> str:
        return hashlib.sha256(f"{tenant_id}:{key}".encode()).hexdigest()


class TenantLock(TenantModel):
    """Lock slots of a tenant, for work that must not run twice at once (a fact's writers, a tenant's
    consolidation or archiving). A row lock lives with the tenant's rows, on whichever node holds
    them; an advisory lock would only serialise the transactions of one node. See `tenants.locks`."""

    slot = models.IntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=("tenant", "slot"), name="uniq_tenant_lock_slot")]

    def __str__(self) -> str:
        return f"lock {self.tenant_id}:{self.slot}"

"""Writes of tenants, keys and operators."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.text import slugify

from core.errors import ValidationProblem
from tenants.models import ApiKey, ApiKeyScope, IdempotencyRecord, IdempotencyTombstone, Tenant, TenantMembership
from tenants.scope import tenant_scope


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    raw: str


def _check_scopes(scopes: Sequence[str]) -> list[str]:
    allowed = set(ApiKeyScope.values)
    bad = [s for s in scopes if s not in allowed]
    if bad or not scopes:
        raise ValidationProblem(f"Scopes must be a non-empty subset of {sorted(allowed)}; got {list(scopes)}.")
    return sorted(set(scopes))


@transaction.atomic
def tenant_create(*, name: str, slug: str | None = None, settings: dict[str, Any] | None = None) -> Tenant:
    return Tenant.objects.create(name=name, slug=slug or slugify(name), settings=settings or {})


@transaction.atomic
def api_key_create(
    *, tenant: Tenant, name: str, scopes: Sequence[str] = ("read", "write"), created_by: str = ""
) -> IssuedKey:
    """A new key; the raw value is in the result and nowhere else, ever."""
    clean = _check_scopes(scopes)
    raw, prefix, key_hash = ApiKey.generate()
    with tenant_scope(tenant):
        api_key = ApiKey.objects.create(
            tenant=tenant, name=name, prefix=prefix, key_hash=key_hash, scopes=clean, created_by=created_by
        )
    return IssuedKey(api_key=api_key, raw=raw)


@transaction.atomic
def api_key_revoke(*, tenant: Tenant, prefix: str) -> ApiKey:
    with tenant_scope(tenant):
        api_key = ApiKey.objects.select_for_update().get(prefix=prefix)
        if api_key.revoked_at is None:
            api_key.revoked_at = timezone.now()
            api_key.save(update_fields=["revoked_at"])
    return api_key


@transaction.atomic
def membership_add(*, tenant: Tenant, user: Any) -> TenantMembership:
    with tenant_scope(tenant):
        membership, _ = TenantMembership.objects.get_or_create(tenant=tenant, user=user)
    return membership


def idempotency_records_purge(*, tenant: Tenant, now: datetime | None = None) -> int:
    """Delete the tenant's stored answers (and tombstones of erased ones) older than
    ENGRAM_IDEMPOTENCY_TTL_HOURS: a replay after that runs the request again. Safe to run any number of
    times; returns how many rows went."""
    cutoff = (now or timezone.now()) - timedelta(hours=int(settings.ENGRAM["IDEMPOTENCY_TTL_HOURS"]))
    with tenant_scope(tenant):
        deleted, _ = IdempotencyRecord.objects.filter(created_at__lt=cutoff).delete()
        buried, _ = IdempotencyTombstone.objects.filter(created_at__lt=cutoff).delete()
    return int(deleted) + int(buried)


def idempotency_records_erase(*, tenant: Tenant, subject: str) -> int:
    """Delete the stored answers about `subject`, leaving a tombstone (a hash of the key) for each, so
    that a replay inside the TTL is refused rather than run again. Call inside the tenant's scope."""
    records = IdempotencyRecord.objects.filter(subjects__contains=[subject])
    graves = [
        IdempotencyTombstone(tenant=tenant, key_hash=IdempotencyTombstone.hash_key(tenant.id, key), created_at=at)
        for key, at in records.values_list("key", "created_at")
    ]
    IdempotencyTombstone.objects.bulk_create(graves, ignore_conflicts=True)
    deleted, _ = records.delete()
    return int(deleted)

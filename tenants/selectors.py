"""Reads of tenants, keys and operators."""

from __future__ import annotations

import uuid
from typing import Any

from core.db import set_local
from tenants.models import ApiKey, Tenant, TenantMembership


def operator_tenant_ids(*, user: Any) -> list[uuid.UUID]:
    """The tenants an operator may see: all for a superuser, their memberships for staff."""
    if user.is_superuser:
        return list(Tenant.objects.values_list("id", flat=True))
    set_local("app.operator_id", str(user.pk))
    return list(TenantMembership.objects.filter(user=user).values_list("tenant_id", flat=True))


def tenant_get_by_slug(*, slug: str) -> Tenant:
    return Tenant.objects.get(slug=slug)


def api_key_list(*, tenant: Tenant) -> list[ApiKey]:
    return list(ApiKey.objects.order_by("-created_at"))

"""Periodic discovery of candidate procedures: one task for all tenants, fanned out per tenant."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from procedural.services import procedures_discover
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.tasks import TenantTask

logger = logging.getLogger(__name__)


@shared_task
def discover_procedures() -> int:
    """Enqueue discovery for every active tenant; returns how many were enqueued."""
    tenant_ids = [str(t) for t in Tenant.objects.filter(active=True).values_list("id", flat=True)]
    for tenant_id in tenant_ids:
        discover_procedures_for_tenant.delay(tenant_id)
    return len(tenant_ids)


@shared_task(base=TenantTask)
def discover_procedures_for_tenant(tenant: Tenant) -> dict[str, Any]:
    # One transaction: the mining reads and the candidates it writes see the same sessions.
    with tenant_scope(tenant):
        report = procedures_discover(tenant=tenant)
    logger.info(
        "procedure discovery for %s: %d sessions, %d patterns tested, created %s, refreshed %s%s",
        tenant.slug,
        report.summary.sessions,
        report.summary.patterns_tested,
        report.created,
        report.refreshed,
        f" ({report.summary.skipped_reason})" if report.summary.skipped_reason else "",
    )
    return report.as_dict()

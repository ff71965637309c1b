"""The base of every tenant task: tasks take ids, tenant first, and run with that tenant loaded.

    @shared_task(base=TenantTask)
    def consolidate_session(tenant: Tenant, session_id: int) -> None:
        with tenant_scope(tenant):          # one transaction per unit of work
            ...

    consolidate_session.delay(str(tenant.id), session.id)   # after commit, from a service

The base turns the id into the Tenant and skips quietly when the tenant is gone or inactive (a task
redelivered after the tenant was removed must not fail forever). It does not open a transaction
itself: long tasks commit in batches, each inside its own `tenant_scope`.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from celery import Task, shared_task

from tenants.models import Tenant
from tenants.services import idempotency_records_purge

logger = logging.getLogger(__name__)


class TenantTask(Task):
    abstract = True

    def __call__(self, tenant_id: str | uuid.UUID, *args: Any, **kwargs: Any) -> Any:
        tenant = Tenant.objects.filter(id=tenant_id, active=True).first()
        if tenant is None:
            logger.info("%s: tenant %s is gone or inactive; skipping", self.name, tenant_id)
            return None
        return super().__call__(tenant, *args, **kwargs)


@shared_task(name="tenants.tasks.purge_idempotency_records")
def purge_idempotency_records() -> int:
    """On a schedule: every tenant's stored idempotent answers past their TTL go. Returns how many."""

    return sum(idempotency_records_purge(tenant=tenant) for tenant in Tenant.objects.all())

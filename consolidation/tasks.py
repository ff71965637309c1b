"""Celery tasks of consolidation and lifecycle. Each takes ids (tenant first) and enters the tenant's
scope per unit of work; each is safe to run twice (late acks redeliver after a worker dies)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from consolidation import services
from consolidation.models import RunTrigger
from episodic.models import Session
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.tasks import TenantTask

logger = logging.getLogger(__name__)


def _task_id(task: Any) -> str:
    return str(getattr(task.request, "id", "") or "")


@shared_task(bind=True, base=TenantTask, name="consolidation.tasks.consolidate_session")
def consolidate_session(self: Any, tenant: Tenant, session_id: int) -> int | None:
    """A session ended: consolidate the tenant's backlog (which holds the session's episodes), then
    store the session's summary. Returns the run id."""
    with tenant_scope(tenant):
        session = Session.objects.for_tenant(tenant).filter(pk=session_id).first()
        if session is None:
            logger.info("consolidate_session: session %s of %s is gone", session_id, tenant.id)
            return None
        subject, external_id = session.subject, session.external_id
    run = services.run_start(
        tenant=tenant,
        trigger=RunTrigger.SESSION_ENDED,
        reason=f"session {external_id} ended",
        subject=subject,
        session_external_id=external_id,
        task_id=_task_id(self),
    )
    services.session_summarise(tenant=tenant, session_id=session_id, run=run)
    services.consolidate(tenant=tenant, run=run)
    return run.pk


@shared_task(bind=True, base=TenantTask, name="consolidation.tasks.consolidate_tenant")
def consolidate_tenant(
    self: Any, tenant: Tenant, trigger: str, reason: str = "", subject: str = "", entity: str = ""
) -> int:
    """Consolidate the tenant's backlog for the sweep or the entity threshold."""
    run = services.run_start(
        tenant=tenant, trigger=trigger, reason=reason, subject=subject, entity=entity, task_id=_task_id(self)
    )
    services.consolidate(tenant=tenant, run=run)
    return run.pk

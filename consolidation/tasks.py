"""Celery tasks of consolidation and lifecycle. Each takes ids (tenant first) and enters the tenant's
scope per unit of work; each is safe to run twice (late acks redeliver after a worker dies)."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from celery import shared_task

from consolidation import lifecycle, metrics, services
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
        session = Session.objects.filter(pk=session_id).first()
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


def _active_tenant_ids() -> list[str]:
    return [str(t) for t in Tenant.objects.filter(active=True).values_list("id", flat=True)]


def _for_each_active_tenant(task: Any) -> int:
    """Enqueue a tenant task once per active tenant; returns how many."""
    tenant_ids = _active_tenant_ids()
    for tenant_id in tenant_ids:
        task.delay(tenant_id)
    return len(tenant_ids)


@shared_task(name="consolidation.tasks.consolidation_sweep")
def consolidation_sweep() -> int:
    """Every few minutes: consolidate each tenant whose backlog hit a trigger (entity threshold) or
    waited longer than its maximum delay. Returns how many tenants were enqueued."""
    enqueued = 0
    for tenant in Tenant.objects.filter(active=True):
        metrics.BACKLOG.labels(str(tenant.id)).set(services.backlog_size(tenant=tenant))
        decision = services.sweep_decision(tenant=tenant)
        if decision is None:
            continue
        trigger, reason, subject, entity = decision
        consolidate_tenant.delay(str(tenant.id), trigger, reason, subject, entity)
        enqueued += 1
    return enqueued


@shared_task(name="consolidation.tasks.decay_and_forget")
def decay_and_forget() -> int:
    return _for_each_active_tenant(decay_and_forget_tenant)


@shared_task(base=TenantTask, name="consolidation.tasks.decay_and_forget_tenant")
def decay_and_forget_tenant(tenant: Tenant) -> dict[str, int]:
    report = lifecycle.facts_decay_and_forget(tenant=tenant)
    metrics.DECAYED.inc(report.decayed)
    metrics.EXPIRED.labels("below_floor").inc(report.expired_below_floor)
    metrics.EXPIRED.labels("unconfirmed").inc(report.expired_unconfirmed)
    return dataclasses.asdict(report)


@shared_task(name="consolidation.tasks.archive_episodes")
def archive_episodes() -> int:
    return _for_each_active_tenant(archive_episodes_tenant)


@shared_task(base=TenantTask, name="consolidation.tasks.archive_episodes_tenant")
def archive_episodes_tenant(tenant: Tenant) -> dict[str, Any]:
    report = lifecycle.episodes_archive(tenant=tenant)
    metrics.ARCHIVED.inc(report.episodes)
    return dataclasses.asdict(report)

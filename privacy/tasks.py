"""Celery tasks of privacy: erasure requests started, retried and carried out, and tenant export files
written. Each takes ids (tenant first); each is safe to run twice (late acks redeliver after a worker
dies)."""

from __future__ import annotations

from datetime import timedelta

from celery import shared_task
from django.db.models import Q
from django.utils import timezone

from privacy import erasure, export, metrics
from privacy.models import ErasureRequest, ErasureStatus
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.tasks import TenantTask


@shared_task(name="privacy.tasks.process_erasure_requests")
def process_erasure_requests() -> int:
    """Every minute: (re)start erasure requests that are waiting or failed, or whose worker died."""
    stale = timezone.now() - timedelta(minutes=30)
    pending: list[tuple[str, str]] = []
    for tenant in Tenant.objects.filter(active=True):
        with tenant_scope(tenant):
            pending += [
                (str(tenant.id), str(pk))
                for pk in ErasureRequest.objects.filter(
                    Q(
                        status__in=[ErasureStatus.RECEIVED, ErasureStatus.FAILED],
                        attempts__lt=erasure.MAX_ERASURE_ATTEMPTS,
                    )
                    | Q(status__in=[ErasureStatus.EXECUTING, ErasureStatus.VERIFYING], started_at__lt=stale)
                ).values_list("pk", flat=True)
            ]
    for tenant_id, request_id in pending:
        execute_erasure.delay(tenant_id, request_id)
    return len(pending)


@shared_task(base=TenantTask, name="privacy.tasks.execute_erasure")
def execute_erasure(tenant: Tenant, request_id: str) -> str | None:
    request = erasure.erasure_execute(tenant=tenant, request_id=request_id)
    if request is not None:
        metrics.ERASURES.labels(request.status).inc()
    return request.status if request else None


@shared_task(base=TenantTask, name="privacy.tasks.export_tenant_file")
def export_tenant_file(tenant: Tenant, name: str) -> str:
    """An export filed from the admin; running it again leaves a finished file as it is."""
    return str(export.tenant_export_file(tenant=tenant, name=name))


# The names these tasks had in consolidation.tasks, for messages queued before the move; the beat rows
# were renamed (privacy/migrations/0002_moved_from_consolidation.py).
shared_task(name="consolidation.tasks.process_erasure_requests")(process_erasure_requests.run)
shared_task(base=TenantTask, name="consolidation.tasks.execute_erasure")(execute_erasure.run)
shared_task(base=TenantTask, name="consolidation.tasks.export_tenant_file")(export_tenant_file.run)

"""Writes of privacy: filing an erasure request (the erasure task carries it out after the commit)
and filing a whole-tenant export file (the export task writes it)."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from django.db import transaction
from django.utils import timezone

from privacy.erasure import subject_erasure_lock, subject_hash
from privacy.export import export_file_name
from privacy.models import ErasureRequest, ErasureStatus
from privacy.tasks import execute_erasure, export_tenant_file
from tenants.models import Tenant
from tenants.scope import tenant_scope

ERASURE_DEADLINE_DAYS = 30


@transaction.atomic
def erasure_request_create(*, tenant: Tenant, subject: str, requested_by: str = "", reason: str = "") -> ErasureRequest:
    """File a request, or answer with the subject's open one: requests for one subject coalesce, so
    that one erasure runs and every caller follows the same request (and receipt)."""
    if not subject.strip():
        raise ValueError("an erasure request needs a subject")
    digest = subject_hash(tenant, subject)
    with tenant_scope(tenant):
        subject_erasure_lock(tenant, digest)
        request = (
            ErasureRequest.objects.filter(subject_hash=digest)
            .exclude(status=ErasureStatus.DONE)
            .order_by("created_at")
            .first()
        )
        if request is not None:
            if request.status != ErasureStatus.FAILED and request.subject:
                return request
            # Asked again after it failed (or lost its subject id to an earlier bug): a fresh start.
            request.subject = subject
            request.attempts = 0
            request.save(update_fields=["subject", "attempts"])
        else:
            request = ErasureRequest.objects.create(
                tenant=tenant,
                subject=subject,
                subject_hash=digest,
                requested_by=requested_by,
                reason=reason,
                deadline=timezone.now() + timedelta(days=ERASURE_DEADLINE_DAYS),
            )
    tenant_id, request_id = str(tenant.id), str(request.id)
    transaction.on_commit(lambda: execute_erasure.delay(tenant_id, request_id))
    return request


def tenant_export_file_request(*, tenant: Tenant) -> str:
    """File an export of the tenant; the export task writes it after the commit. Returns its name."""
    name = export_file_name(tenant)
    transaction.on_commit(partial(export_tenant_file.delay, str(tenant.id), name))
    return name

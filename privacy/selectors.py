"""Reads of privacy: an erasure request, and the erasure figures of GET /v1/stats and the dashboard."""

from __future__ import annotations

import uuid

from django.db.models import Count

from core.errors import NotFound
from privacy.models import ErasureRequest, ErasureStatus
from tenants.models import Tenant
from tenants.scope import tenant_scope


def erasure_request_get(*, tenant: Tenant, request_id: uuid.UUID | str) -> ErasureRequest:
    try:
        pk = uuid.UUID(str(request_id))
    except ValueError as exc:
        raise NotFound(f"No erasure request {request_id}.") from exc
    with tenant_scope(tenant):
        request = ErasureRequest.objects.filter(pk=pk).first()
    if request is None:
        raise NotFound(f"No erasure request {request_id}.")
    return request


# The figures below read in the caller's scope (the API request's, the dashboard page's), as
# episodic.selectors.embedding_backlog does: a scope of their own would cost four statements a page.


def erasure_requests_by_status(*, tenant: Tenant) -> dict[str, int]:
    rows = ErasureRequest.objects.values_list("status").annotate(n=Count("id")).values_list("status", "n")
    return dict(rows)


def erasures_in_progress(*, tenant: Tenant) -> int:
    """Requests neither done nor failed: the dashboard's erasure backlog."""
    return ErasureRequest.objects.exclude(status__in=[ErasureStatus.DONE, ErasureStatus.FAILED]).count()

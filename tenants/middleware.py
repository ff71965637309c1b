"""The transaction that carries the tenant scope of every API, admin and dashboard request."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction
from django.http import HttpRequest, HttpResponse

from tenants import scope
from tenants.selectors import operator_tenant_ids

SCOPED_PREFIXES = ("/v1/", "/admin/", "/dashboard/")


class TenantScopeMiddleware:
    """Runs every API and admin request in one transaction, so that the tenant setting entered by
    authentication is transaction-local, and rolls it back whole when the answer is an error: a
    request that fails leaves nothing half-written."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(SCOPED_PREFIXES):
            return self.get_response(request)
        nested = transaction.get_connection().in_atomic_block
        try:
            with transaction.atomic():
                user = getattr(request, "user", None)
                if user is not None and user.is_authenticated and user.is_staff:
                    scope.activate(operator_tenant_ids(user=user))
                response = self.get_response(request)
                if response.status_code >= 400:
                    transaction.set_rollback(True)
                elif nested and scope.active_tenant_ids() is not None:
                    # Inside an outer transaction (tests) the setting would outlive the request.
                    scope.clear_db_setting()
            return response
        finally:
            scope.deactivate()

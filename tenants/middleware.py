"""Request-level guards: body size, and the transaction that carries the tenant scope."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.http import HttpRequest, HttpResponse

from tenants import scope
from tenants.api.problems import problem_response
from tenants.selectors import operator_tenant_ids

SCOPED_PREFIXES = ("/v1/", "/admin/", "/dashboard/")


class BodySizeLimitMiddleware:
    """Refuse an oversized body before anything reads it (the JSON parser enforces it again while
    reading, for bodies without a Content-Length)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.ENGRAM["MAX_BODY_BYTES"]
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit and request.path.startswith("/v1/"):
            return problem_response(
                status=413,
                title="Payload too large",
                type_slug="payload-too-large",
                detail=f"The request body is {length} bytes; the limit is {limit}.",
            )
        return self.get_response(request)


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

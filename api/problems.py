"""RFC 9457 problem details: the one shape of every error the API returns."""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, JsonResponse, UnreadablePostError
from rest_framework import exceptions
from rest_framework.exceptions import ErrorDetail

from core.errors import DomainError

logger = logging.getLogger(__name__)

PROBLEM_CONTENT_TYPE = "application/problem+json"

_DRF_TYPES: dict[type[exceptions.APIException], tuple[str, str]] = {
    exceptions.ValidationError: ("validation-error", "Invalid request"),
    exceptions.ParseError: ("malformed-request", "Malformed request"),
    exceptions.NotAuthenticated: ("not-authenticated", "Not authenticated"),
    exceptions.AuthenticationFailed: ("authentication-failed", "Authentication failed"),
    exceptions.PermissionDenied: ("permission-denied", "Permission denied"),
    exceptions.NotFound: ("not-found", "Not found"),
    exceptions.MethodNotAllowed: ("method-not-allowed", "Method not allowed"),
    exceptions.NotAcceptable: ("not-acceptable", "Not acceptable"),
    exceptions.UnsupportedMediaType: ("unsupported-media-type", "Unsupported media type"),
    exceptions.Throttled: ("rate-limited", "Too many requests"),
}


def problem_response(
    *,
    status: int,
    title: str,
    detail: str,
    type_slug: str | None = None,
    errors: list[dict[str, Any]] | None = None,
    extra: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    instance: str | None = None,
) -> JsonResponse:
    body: dict[str, Any] = {
        "type": f"/problems/{type_slug}" if type_slug else "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    if errors:
        body["errors"] = errors
    if extra:
        body.update(extra)
    response = JsonResponse(body, status=status, content_type=PROBLEM_CONTENT_TYPE)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def flatten_errors(detail: Any, pointer: str = "") -> list[dict[str, Any]]:
    """DRF's nested error structure as a flat list of {pointer, detail} with JSON pointers."""
    if isinstance(detail, dict):
        out: list[dict[str, Any]] = []
        for key, value in detail.items():
            sub = pointer if key == "non_field_errors" else f"{pointer}/{_escape(str(key))}"
            out.extend(flatten_errors(value, sub))
        return out
    if isinstance(detail, list):
        if all(isinstance(item, (str, ErrorDetail)) for item in detail):
            return [{"pointer": pointer or "/", "detail": str(item)} for item in detail]
        out = []
        for index, item in enumerate(detail):
            if item:
                out.extend(flatten_errors(item, f"{pointer}/{index}"))
        return out
    return [{"pointer": pointer or "/", "detail": str(detail)}]


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> JsonResponse:
    # Every error answer changes nothing: the request transaction is rolled back.
    if transaction.get_connection().in_atomic_block:
        transaction.set_rollback(True)
    request = context.get("request")
    instance = getattr(request, "path", None)
    if isinstance(exc, DomainError):
        return problem_response(
            status=exc.status,
            title=exc.title,
            detail=exc.detail,
            type_slug=exc.type_slug,
            errors=exc.errors,
            extra=exc.extra,
            instance=instance,
        )
    if isinstance(exc, UnreadablePostError):
        # The client stopped sending before its Content-Length (gunicorn's body timeout, a reset).
        exc = exceptions.ParseError("The body could not be read whole: it ended early or stopped arriving.")
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    if isinstance(exc, exceptions.APIException):
        type_slug, title = _DRF_TYPES.get(type(exc), ("error", "Error"))
        headers: dict[str, str] = {}
        wait = getattr(exc, "wait", None)
        if isinstance(exc, exceptions.Throttled) and wait is not None:
            headers["Retry-After"] = str(int(wait) + 1)
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            headers["WWW-Authenticate"] = 'Bearer realm="engram"'
        if isinstance(exc, exceptions.ValidationError):
            errors = flatten_errors(exc.detail)
            detail = "; ".join(f"{e['pointer']}: {e['detail']}" for e in errors[:5])
            return problem_response(
                status=exc.status_code,
                title=title,
                detail=detail,
                type_slug=type_slug,
                errors=errors,
                headers=headers,
                instance=instance,
            )
        return problem_response(
            status=exc.status_code,
            title=title,
            detail=str(exc.detail),
            type_slug=type_slug,
            headers=headers,
            instance=instance,
        )
    logger.exception("Unhandled error in %s", getattr(request, "path", "?"), exc_info=exc)
    return problem_response(
        status=500, title="Internal error", detail="The server failed to answer this request.", type_slug="internal"
    )


def not_found_view(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return problem_response(
        status=404, title="Not found", detail="No such resource.", type_slug="not-found", instance=request.path
    )


def bad_request_view(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    # Django's own 400s (a Host not in ALLOWED_HOSTS, other SuspiciousOperation) come here, not to a view.
    return problem_response(
        status=400,
        title="Bad request",
        detail="The request was refused before it reached the API.",
        type_slug="bad-request",
    )


def server_error_view(request: HttpRequest) -> JsonResponse:
    return problem_response(
        status=500, title="Internal error", detail="The server failed to answer this request.", type_slug="internal"
    )

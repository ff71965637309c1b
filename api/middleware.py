"""Request-level guards: the Host of every request, and the body size and framing of /v1/."""

from __future__ import annotations

import io
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse

from api.problems import problem_response

BODY_METHODS = ("POST", "PUT", "PATCH")


class AllowedHostMiddleware:
    """A Host not in DJANGO_ALLOWED_HOSTS is a 400 problem before any other code reads the request.
    Without DEBUG Django answers it through handler400 already; with DEBUG on it answered with the
    debug page, every setting on it, to whoever pointed a name at the machine (DNS rebinding)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            request.get_host()
        except DisallowedHost:
            return problem_response(
                status=400,
                title="Bad request",
                detail="The request was refused before it reached the API.",
                type_slug="bad-request",
            )
        return self.get_response(request)


class BodySizeLimitMiddleware:
    """Refuse an oversized body before anything reads it (the JSON parser enforces it again while
    reading), and read a body sent without Content-Length (Transfer-Encoding: chunked) here, whole and
    within the limit, or refuse it with 411: Django reads a body by its Content-Length alone, so it
    would otherwise see an empty body, and an empty PUT would replace a document with `{}`."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith("/v1/"):
            return self.get_response(request)
        limit = settings.ENGRAM["MAX_BODY_BYTES"]
        if (
            request.method in BODY_METHODS
            and request.META.get("HTTP_TRANSFER_ENCODING")
            and not request.META.get("CONTENT_LENGTH")
        ):
            refused = _read_unframed_body(request, limit=limit)
            if refused is not None:
                return refused
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            return _too_large(f"The request body is {length} bytes; the limit is {limit}.")
        return self.get_response(request)


def _too_large(detail: str) -> HttpResponse:
    return problem_response(status=413, title="Payload too large", type_slug="payload-too-large", detail=detail)


def _read_unframed_body(request: HttpRequest, *, limit: int) -> HttpResponse | None:
    """A server that decodes the transfer coding says so with `wsgi.input_terminated` (gunicorn does;
    Django's development server does not): then the input ends where the body ends and is read here;
    otherwise the body cannot be told from the connection's next bytes."""
    if not request.META.get("wsgi.input_terminated"):
        return problem_response(
            status=411,
            title="Length required",
            type_slug="length-required",
            detail="This server cannot read a body without Content-Length here; send Content-Length.",
        )
    try:
        raw = request.META["wsgi.input"].read(limit + 1)
    except OSError:
        return problem_response(
            status=400,
            title="Malformed request",
            type_slug="malformed-request",
            detail="The body could not be read whole: it ended early or stopped arriving.",
        )
    if len(raw) > limit:
        return _too_large(f"The request body exceeds the limit of {limit} bytes.")
    request._stream = io.BytesIO(raw)  # WSGIRequest reads its body from here
    request.META["CONTENT_LENGTH"] = str(len(raw))
    return None

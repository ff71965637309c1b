"""The OpenAPI description, made to tell the truth centrally rather than view by view:

- every /v1/ operation documents the RFC 9457 problem+json answers it can give, by rule (any request
  may be malformed, unauthenticated, out of scope or throttled; a path names something that may be
  missing; a body may be too large or of another media type; a write may conflict; an Idempotency-Key
  may be reused or in flight; an If-Match may be stale);
- a list documents the page it answers ({next, previous, results}) and its cursor and limit;
- a DELETE that answers with a body documents 200 with that body, as it answers, not 204;
- nested Input/Output serializers get component names that include their view, so that two views'
  `OutputSerializer`s do not collapse into one wrong component;
- the API-key authentication scheme (drf-spectacular extension).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.permissions import SAFE_METHODS

from api.pagination import CreatedCursorPagination
from api.problems import PROBLEM_CONTENT_TYPE

PROBLEM_COMPONENT = "Problem"

PROBLEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "RFC 9457 problem details: the shape of every error the API answers.",
    "properties": {
        "type": {"type": "string", "description": "A URI reference naming the kind of problem."},
        "title": {"type": "string", "description": "A short summary of the kind of problem."},
        "status": {"type": "integer", "description": "The HTTP status code."},
        "detail": {"type": "string", "description": "What went wrong with this request."},
        "instance": {"type": "string", "description": "The path of the request."},
        "errors": {
            "type": "array",
            "description": "Each invalid field of the request, with a JSON pointer to it.",
            "items": {
                "type": "object",
                "properties": {"pointer": {"type": "string"}, "detail": {"type": "string"}},
                "required": ["pointer", "detail"],
            },
        },
    },
    "required": ["type", "title", "status", "detail"],
    "additionalProperties": True,
}

PROBLEM_DESCRIPTIONS = {
    400: "Invalid request: a field, parameter or header is wrong (`errors` points at each).",
    401: "Missing or invalid API key.",
    403: "The API key lacks the scope this operation needs.",
    404: "Not found (or another tenant's: the two are never told apart).",
    409: "Conflict with the current state, or a request with this Idempotency-Key is still in flight.",
    411: "A body without Content-Length that this server cannot read (send Content-Length).",
    412: "If-Match names a version that is no longer current.",
    413: "The body, or a field of it, is larger than the limits allow.",
    415: "The body is not of a supported media type (application/json).",
    422: "This Idempotency-Key was already used with a different request.",
    429: "Too many requests, or too many failed authentications; see Retry-After.",
}

IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description="Replays the first successful answer for a repeat of the same request (at most 255 characters).",
)


def _is_idempotent(method: Any) -> bool:
    return bool(getattr(method, "idempotent", False))


class ProblemAutoSchema(AutoSchema):
    def _view_method(self) -> Any:
        return getattr(self.view, (self.method or "get").lower(), None)

    def _get_paginator(self) -> Any:
        # Every list of /v1/ pages with the same cursor pagination; its views are APIViews, which
        # drf-spectacular cannot ask for a pagination class.
        if self.method == "GET" and self.path.startswith("/v1/"):
            return CreatedCursorPagination()
        return super()._get_paginator()

    def get_override_parameters(self) -> list[Any]:
        parameters = list(super().get_override_parameters())
        if _is_idempotent(self._view_method()):
            parameters.append(IDEMPOTENCY_KEY)
        return parameters

    def get_serializer_name(self, serializer: serializers.Serializer, direction: Any) -> str:
        qualname = type(serializer).__qualname__
        if "." not in qualname:
            return super().get_serializer_name(serializer, direction)
        # EpisodeSearchApi.InputSerializer -> EpisodeSearchInput
        outer, _, inner = qualname.rpartition(".")
        return outer.replace(".", "").removesuffix("Api") + inner.removesuffix("Serializer")

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        declared = self.get_response_serializers()
        if self.method == "DELETE" and declared is not None and not isinstance(declared, dict):
            responses = {"200": self._get_response_for_code(declared, "200", direction=direction)}
        else:
            responses = super()._get_response_bodies(direction)
        if direction == "response" and self.path.startswith("/v1/"):
            for status in self._problem_statuses():
                responses.setdefault(str(status), self._problem_response(status))
        return responses

    def _problem_statuses(self) -> list[int]:
        method = (self.method or "GET").upper()
        statuses = {400, 401, 403, 429}
        header_names = {
            p.name for p in self.get_override_parameters() if isinstance(p, OpenApiParameter) and p.location == "header"
        }
        if "{" in self.path or method not in SAFE_METHODS:
            statuses.add(404)
        if method in ("POST", "PUT", "PATCH"):
            statuses |= {411, 413, 415}
        if method not in SAFE_METHODS and getattr(self.view, "required_scope", None) != "read":
            statuses.add(409)
        if _is_idempotent(self._view_method()):
            statuses |= {409, 422}
        if "If-Match" in header_names:
            statuses.add(412)
        return sorted(statuses)

    def _problem_response(self, status: int) -> dict[str, Any]:
        component = ResolvedComponent(
            name=PROBLEM_COMPONENT, type=ResolvedComponent.SCHEMA, object=PROBLEM_COMPONENT, schema=PROBLEM_SCHEMA
        )
        self.registry.register_on_missing(component)
        response: dict[str, Any] = {
            "description": PROBLEM_DESCRIPTIONS[status],
            "content": {PROBLEM_CONTENT_TYPE: {"schema": component.ref}},
        }
        if status == 429:
            response["headers"] = {
                "Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait before retrying."}
            }
        return response


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "api.auth.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "http", "scheme": "bearer", "description": "An Engram API key: `Bearer eng_<prefix>_<secret>`"}

"""The base of every /v1/ view."""

from collections.abc import Callable
from typing import Any, NoReturn

from django.db.models import QuerySet
from rest_framework import exceptions
from rest_framework.exceptions import ErrorDetail
from rest_framework.pagination import BasePagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.auth import BEARER_FORMAT, request_tenant
from core.errors import ValidationProblem
from core.text import text_problem
from tenants.models import Tenant

# Headers whose values reach the database or a comparison.
CHECKED_HEADERS = ("Idempotency-Key", "If-Match", "If-None-Match")


class TenantAPIView(APIView):
    """An APIView whose request has been authenticated for one tenant, whose scope is active."""

    @property
    def tenant(self) -> Tenant:
        return request_tenant(self.request)

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[Any, str]:
        # JSON is the one representation: neither `?format=` (a query parameter like any other here)
        # nor Accept selects another, so neither can turn a request into an undocumented 404 or 406.
        renderer = self.get_renderers()[0]
        return renderer, renderer.media_type

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        _check_request_text(request, kwargs)

    def permission_denied(self, request: Request, message: str | None = None, code: str | None = None) -> NoReturn:
        # DRF's own text ("Authentication credentials were not provided.") leaves out the format.
        if request.authenticators and not request.successful_authenticator:
            sent = "The Authorization header is not a Bearer token" if request.headers.get("Authorization") else ""
            raise exceptions.NotAuthenticated(f"{sent or 'No API key was sent'}. {BEARER_FORMAT}")
        super().permission_denied(request, message=message, code=code)

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, exceptions.UnsupportedMediaType):
            accepted = " or ".join(parser.media_type for parser in self.get_parsers())
            exc.detail = ErrorDetail(f"{exc.detail} Send the body as JSON with Content-Type: {accepted}.")
        return super().handle_exception(exc)

    def paginated(
        self, paginator: BasePagination, queryset: QuerySet[Any], render: Callable[[list[Any]], Any]
    ) -> Response:
        """The page of `queryset` this request asks for, its items rendered by `render`, with the next cursor."""
        page = paginator.paginate_queryset(queryset, self.request, view=self) or []
        return paginator.get_paginated_response(render(page))


def _check_request_text(request: Request, kwargs: dict[str, Any]) -> None:
    """Path, query and header text the database cannot store is a 400 here, for every view, rather than an
    error from wherever it first reaches PostgreSQL (the body is checked by the parser). A path parameter
    is named by its name, as a query parameter is."""
    for name, value in kwargs.items():
        if isinstance(value, str) and (problem := text_problem(value)) is not None:
            raise ValidationProblem.at(f"/{name}", f"The {name} in the path: {problem}")
    for name, values in request.query_params.lists():
        for value in (name, *values):
            if (problem := text_problem(value)) is not None:
                raise ValidationProblem.at(f"/{name}", problem)
    for header in CHECKED_HEADERS:
        value = request.headers.get(header)
        if value is not None and (problem := text_problem(value) or _control_problem(value)) is not None:
            raise ValidationProblem.at("/", f"{header}: {problem}")


def _control_problem(value: str) -> str | None:
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        return "Control characters are not allowed."
    return None

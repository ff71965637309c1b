"""Cursor pagination for every list: stable under inserts, opaque to clients."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Field, Model, QuerySet
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request

from core.errors import ValidationProblem

MAX_CURSOR_CHARS = 1000


class CreatedCursorPagination(CursorPagination):
    ordering: Any = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 500

    def paginate_queryset(self, queryset: QuerySet[Any], request: Request, view: Any = None) -> list[Any] | None:
        self._model: type[Model] = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Request) -> Cursor | None:
        """A cursor the client altered is a 400 naming the parameter, whatever part of it is wrong: a
        position that is not a value of the ordering field would otherwise reach the database."""
        raw = request.query_params.get(self.cursor_query_param) or ""
        if len(raw) > MAX_CURSOR_CHARS:
            raise ValidationProblem.at(f"/{self.cursor_query_param}", "Invalid cursor.")
        try:
            cursor = super().decode_cursor(request)
        except NotFound as exc:
            raise ValidationProblem.at(f"/{self.cursor_query_param}", "Invalid cursor.") from exc
        if cursor is not None and cursor.position is not None:
            first = self.ordering[0] if isinstance(self.ordering, (list, tuple)) else self.ordering
            field = self._model._meta.get_field(first.lstrip("-"))
            try:
                if isinstance(field, Field):
                    field.to_python(cursor.position)
            except (DjangoValidationError, ValueError, TypeError, OverflowError) as exc:
                raise ValidationProblem.at(f"/{self.cursor_query_param}", "Invalid cursor.") from exc
        return cursor

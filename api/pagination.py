"""Cursor pagination for every list: stable under inserts, opaque to clients."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any
from urllib.parse import parse_qs

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Field, Model, QuerySet
from rest_framework.exceptions import NotFound
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request

from core.errors import ValidationProblem

MAX_CURSOR_CHARS = 1000
_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_CURSOR_KEYS = {"o", "r", "p"}
_LIMIT = re.compile(r"[0-9]{1,4}")


def _cursor_well_formed(raw: str) -> bool:
    """What DRF would read leniently: base64 that skips the characters it does not know (so `!!!***`
    decodes to nothing, which is page 1) and a query string of any keys."""
    if not _BASE64.fullmatch(raw):
        return False
    try:
        text = base64.b64decode(raw, validate=True).decode("ascii")
        tokens = parse_qs(text, keep_blank_values=True, strict_parsing=True)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return bool(tokens) and set(tokens) <= _CURSOR_KEYS


class CreatedCursorPagination(CursorPagination):
    ordering: Any = ("-created_at", "-id")
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 500

    def paginate_queryset(self, queryset: QuerySet[Any], request: Request, view: Any = None) -> list[Any] | None:
        self._model: type[Model] = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def get_page_size(self, request: Request) -> int:
        """`limit` is a whole number from 1 to max_page_size, or a 400 (DRF would ignore -1, 0 and `abc`)."""
        raw = request.query_params.get(self.page_size_query_param or "limit")
        if raw is None:
            return int(self.page_size)
        if not _LIMIT.fullmatch(raw) or not 1 <= int(raw) <= self.max_page_size:
            raise ValidationProblem.at("/limit", f"A whole number from 1 to {self.max_page_size}.")
        return int(raw)

    def decode_cursor(self, request: Request) -> Cursor | None:
        """A cursor the client altered is a 400 naming the parameter, whatever part of it is wrong: a
        position that is not a value of the ordering field would otherwise reach the database. An empty
        `cursor=` is the first page."""
        raw = request.query_params.get(self.cursor_query_param) or ""
        if not raw:
            return None
        if len(raw) > MAX_CURSOR_CHARS or not _cursor_well_formed(raw):
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

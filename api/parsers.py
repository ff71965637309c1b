"""JSON parsing for every endpoint: the body limit enforced while reading, Content-Length or not, and
the text every layer below may assume: valid UTF-8, nested at most MAX_DEPTH deep, and no NUL or lone
surrogate in any key or string (PostgreSQL stores neither, and `str.encode()` fails on a surrogate)."""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from core.errors import PayloadTooLarge, ValidationProblem
from core.text import text_problem

# Deep enough for any real document; shallow enough that nothing recursive below (merge patch, the
# renderer, PostgreSQL's jsonb) runs out of stack.
MAX_DEPTH = 64

# NUL and lone surrogates reach a parsed string only through a \u escape; a body with none skips the walk.
_SUSPECT_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def _pointer_token(token: str | int) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def check_json_value(data: Any, *, check_text: bool = True) -> None:
    """Raise a problem if `data` is nested deeper than MAX_DEPTH or holds NUL or a lone surrogate.

    Walked with an explicit stack, so that no depth of input can exhaust Python's."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            if len(path) >= MAX_DEPTH:
                raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.")
            for key, item in value.items():
                if check_text and (problem := text_problem(key)) is not None:
                    pointer = "".join(f"/{_pointer_token(t)}" for t in path) or "/"
                    raise ValidationProblem.at(pointer, f"A key: {problem}")
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            if len(path) >= MAX_DEPTH:
                raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.")
            stack.extend((item, (*path, index)) for index, item in enumerate(value))
        elif check_text and isinstance(value, str) and (problem := text_problem(value)) is not None:
            raise ValidationProblem.at("".join(f"/{_pointer_token(t)}" for t in path) or "/", problem)


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.ENGRAM["MAX_BODY_BYTES"]
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"The request body exceeds the limit of {limit} bytes.")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ParseError(f"The body is not valid UTF-8 (byte {exc.start}).") from exc
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except RecursionError as exc:
            raise ParseError(f"JSON nested more than {MAX_DEPTH} levels deep.") from exc
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from exc
        check_json_value(data, check_text=_SUSPECT_ESCAPE.search(text) is not None)
        return data


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")

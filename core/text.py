"""Text PostgreSQL cannot store and UTF-8 cannot encode: NUL and lone surrogates."""

from __future__ import annotations

import re

_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored, or None when it can."""
    found = _BAD_CHAR.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return "Null characters are not allowed."
    return "Lone surrogate characters are not allowed (a surrogate pair is one character)."

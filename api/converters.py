"""URL converters for the tenant's own ids (subjects, sessions, entities), which may hold `/`.

Clients percent-encode an id (`org%2Falice`), but WSGI hands the application a decoded path, so a
route must accept `/` inside the id: every such route ends in a fixed suffix or is the session
detail, which leaves out the suffixes of the routes beside it (ids ending in them are refused when
written, so every id that can be written can be addressed)."""

from __future__ import annotations

from django.urls import register_converter

SESSION_ROUTE_SUFFIXES = ("end", "scratchpad")


class ExternalIdConverter:
    # Any character, newline included (the `path` converter's `.+` stops at a newline).
    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class SessionDetailConverter(ExternalIdConverter):
    regex = r"(?:(?!/(?:" + "|".join(SESSION_ROUTE_SUFFIXES) + r")\Z)[\s\S])+"


register_converter(ExternalIdConverter, "extid")
register_converter(SessionDetailConverter, "session_id")

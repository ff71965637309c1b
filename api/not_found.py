"""The 404 of a path under /v1/ that no route matches: it names the route most like it, and the docs."""

from __future__ import annotations

import difflib
import re
from functools import cache

from django.http import HttpRequest, JsonResponse
from django.urls import URLPattern, URLResolver, get_resolver

from api.problems import problem_response

DOCS = "/api/docs/"
CATCH_ALL = "v1-not-found"
# How close a path must be to a route's to be offered as the one meant (difflib's ratio, 0 to 1).
CUTOFF = 0.6
# Longer paths are not compared (the cost grows with the square of the length) nor repeated whole.
MAX_COMPARED = 300
_PARAMETER = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
_KINDS = {"uuid": "a UUID", "int": "a whole number"}


@cache
def v1_routes() -> tuple[tuple[str, dict[str, str]], ...]:
    """Every route under /v1/ as written in the docs (`/v1/facts/{fact_id}`), with the converter of
    each parameter; read once from the URL map, so a new route is offered without a change here."""
    routes = []
    for entry in get_resolver().url_patterns:
        if isinstance(entry, URLResolver) and str(entry.pattern) == "v1/":
            for pattern in entry.url_patterns:
                if isinstance(pattern, URLPattern) and pattern.name != CATCH_ALL:
                    route = str(pattern.pattern)
                    converters = {m["name"]: m["converter"] or "str" for m in _PARAMETER.finditer(route)}
                    routes.append(("/v1/" + _PARAMETER.sub(r"{\g<name>}", route), converters))
    return tuple(routes)


def _filled(template: str, segments: list[str]) -> str:
    """The template with each parameter replaced by the path's segment at its place, if the path has one."""
    parts = template.split("/")
    return "/".join(segments[i] if part.startswith("{") and i < len(segments) else part for i, part in enumerate(parts))


def closest_route(path: str) -> tuple[str, dict[str, str], bool] | None:
    """The route most like `path`: (template, converters, whether the path has its very shape, so that
    only a parameter's value is wrong), or None when none is close."""
    path = path.rstrip("/")
    if len(path) > MAX_COMPARED:
        return None
    segments = path.split("/")
    best: tuple[float, str, dict[str, str], bool] | None = None
    for template, converters in v1_routes():
        filled = _filled(template, segments)
        # Compared without the `/v1/` every route shares, which would make every pair look alike.
        score = difflib.SequenceMatcher(None, path.removeprefix("/v1/"), filled.removeprefix("/v1/")).ratio()
        if best is None or score > best[0]:
            best = (score, template, converters, filled == path and "{" not in filled)
    if best is None or best[0] < CUTOFF:
        return None
    return best[1], best[2], best[3]


def v1_not_found_view(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    shown = request.path if len(request.path) <= MAX_COMPARED else request.path[:MAX_COMPARED] + "…"
    detail = f"No route matches {shown}."
    match = closest_route(request.path)
    if match is not None:
        template, converters, same_shape = match
        if same_shape and converters:
            wants = ", ".join(f"{{{name}}} is {_KINDS.get(kind, 'an id')}" for name, kind in converters.items())
            detail += f" Did you mean {template}? There {wants}."
        else:
            detail += f" Did you mean {template}?"
    detail += f" Every route is listed at {DOCS}."
    return problem_response(status=404, title="Not found", detail=detail, type_slug="not-found", instance=request.path)

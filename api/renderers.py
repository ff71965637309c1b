"""The API's JSON renderer: DRF's, its text encoded by orjson (core.jsonb).

A context's answer at 4,000 tokens is about 75 KB of JSON; DRF's renderer (the standard library's
encoder) took 1.5-1.8 ms of the request's CPU to write it, orjson a tenth of that. The answer is the
same JSON: DRF's compact separators, UTF-8 text, its escapes of U+2028 and U+2029, its representation
of what JSON has no type for (dates and times, decimals: DRF's encoder is orjson's `default`). Anything
orjson refuses (an integer beyond 64 bits, a type DRF's encoder does not know) and an indented answer
go to DRF's renderer, which answers or refuses as before. One difference: a float that is not a number
is written `null`, where DRF refused the answer (no answer of the API is meant to hold one)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

from core.jsonb import OPTIONS

# Dates, times and dataclasses as DRF writes them (or refuses them), not as orjson would; keys that are
# not strings only when an answer has one (core.jsonb.OPTIONS).
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_DEFAULT = JSONEncoder().default


class OrjsonRenderer(JSONRenderer):
    def render(
        self, data: Any, accepted_media_type: str | None = None, renderer_context: Mapping[str, Any] | None = None
    ) -> bytes:
        if data is None:
            return b""
        if self.get_indent(accepted_media_type or "", renderer_context or {}) is not None:
            return super().render(data, accepted_media_type, renderer_context)
        try:
            text = orjson.dumps(data, default=_DEFAULT, option=_OPTIONS)
        except TypeError:
            try:
                text = orjson.dumps(data, default=_DEFAULT, option=_OPTIONS | OPTIONS)
            except TypeError:
                return super().render(data, accepted_media_type, renderer_context)
        # As DRF does: a strict subset of JavaScript, whose strings may not hold these two unescaped.
        return text.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")

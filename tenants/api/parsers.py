"""JSON parsing with the body limit enforced while reading, Content-Length or not."""

from typing import Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from core.errors import PayloadTooLarge


class LimitedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = settings.ENGRAM["MAX_BODY_BYTES"]
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"The request body exceeds the limit of {limit} bytes.")
        import io

        return super().parse(io.BytesIO(raw), media_type, parser_context)

"""JSON encoded by orjson, for the large documents of the read path: a context's trace (its items and the
200 candidates left out, 85-145 KB a request) and the API's answers.

The standard library's encoder took 2-4 ms of a context request's CPU for the trace alone; orjson takes
a twentieth of that. What the database stores is the same: a jsonb value is parsed, so its numbers and
strings do not keep the text they were sent as (`1e-07` and `1e-7` are one number). A value orjson
cannot encode (an integer beyond 64 bits) goes through the standard library, which also says what it
refuses, as before. One difference: a float that is not a number is stored as `null`, where json's
`NaN` made PostgreSQL refuse the statement (no trace is meant to hold one)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from django.db import models
from psycopg.types.json import Jsonb

# Dictionary keys that are numbers, booleans or None become strings, as json.dumps makes them. The option
# doubles orjson's time on the read path's documents (it examines every key) and they have no such key:
# it is asked for only when a document was refused without it (dumps).
OPTIONS = orjson.OPT_NON_STR_KEYS


def _default(value: Any) -> Any:
    # json.dumps writes a float subclass (numpy's float64) as a float; orjson asks.
    if isinstance(value, float):
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> bytes:
    """`value` as JSON text (UTF-8), the value json.dumps gives."""
    try:
        return orjson.dumps(value, default=_default)
    except TypeError:
        pass
    try:
        return orjson.dumps(value, default=_default, option=OPTIONS)
    except TypeError:
        return json.dumps(value).encode()


class JSONBField(models.JSONField):
    """A JSONField whose values reach PostgreSQL encoded by `dumps` instead of json.dumps (no `encoder`)."""

    def get_db_prep_value(self, value: Any, connection: Any, prepared: bool = False) -> Any:
        if self.encoder is not None:
            return super().get_db_prep_value(value, connection, prepared)
        if not prepared:
            value = self.get_prep_value(value)
        return Jsonb(value, dumps=dumps)

    def deconstruct(self) -> Any:
        # The column is a JSONField's: migrations see one, and need none for the change of encoder.
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs

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
from collections.abc import Mapping, Sequence
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


# A list of rows stored as its columns (RowsField): what marks the document.
TABLE_ROWS = "rows"
TABLE_COLUMNS = "columns"


def _jsonb_key(key: str) -> tuple[int, bytes]:
    # jsonb keeps an object's keys shorter first, then by their bytes: the order it reads them back in.
    raw = key.encode()
    return len(raw), raw


def _grouped(column: Mapping[str, Any], n: int, reorder: bool) -> list[dict[str, Any]]:
    """A column of objects stored by their keys' shapes: `shapes` (each a list of keys), `shape` (each
    row's shape, by position) and `values` (per shape, its rows' values one after the other)."""
    shapes = [list(keys) for keys in column["shapes"]]
    orders: list[list[int] | None] = [None] * len(shapes)
    if reorder:
        for k, keys in enumerate(shapes):
            ranks = [_jsonb_key(key) for key in keys]
            order = sorted(range(len(keys)), key=ranks.__getitem__)
            if order != list(range(len(keys))):
                orders[k] = order
                shapes[k] = [keys[j] for j in order]
    place = [0] * len(shapes)
    values = column["values"]
    out: list[dict[str, Any]] = []
    for k in column["shape"][:n]:
        width = len(shapes[k])
        start = place[k]
        place[k] = start + width
        row = values[k][start : start + width]
        order = orders[k]
        out.append(dict(zip(shapes[k], row if order is None else [row[j] for j in order], strict=True)))
    return out


def table_rows(table: Mapping[str, Any], *, as_jsonb: bool = False) -> list[dict[str, Any]]:
    """The rows of a table document (rows_table): row i holds each column's i-th value; a column of
    objects (stored by shape) gives each row its object. `as_jsonb`: every object's keys in the order
    jsonb reads them back in, so the rows are, to the order of their keys, those of the document stored
    as a list of rows."""
    n = int(table[TABLE_ROWS])
    columns: Mapping[str, Any] = table[TABLE_COLUMNS]
    keys = sorted(columns, key=_jsonb_key) if as_jsonb else list(columns)
    values = [
        _grouped(columns[key], n, as_jsonb) if isinstance(columns[key], Mapping) else columns[key][:n] for key in keys
    ]
    return [dict(zip(keys, row, strict=True)) for row in zip(*values, strict=True)] if keys else [{} for _ in range(n)]


def rows_table(n: int, columns: Mapping[str, Any]) -> dict[str, Any]:
    """`n` rows as their columns (each a list of n values, or a column of objects: grouped_column), about
    half the text of the rows themselves, each key written once instead of once per row; table_rows
    gives them back."""
    return {TABLE_ROWS: n, TABLE_COLUMNS: dict(columns)}


def grouped_column(
    shapes: Sequence[Sequence[str]], shape: Sequence[int], values: Sequence[Sequence[Any]]
) -> dict[str, Any]:
    """A column of objects for rows_table: each row's object is dict(zip(shapes[shape[i]], its values)),
    its values taken in turn from values[shape[i]]."""
    return {"shapes": [list(keys) for keys in shapes], "shape": list(shape), "values": [list(v) for v in values]}


def rows_as_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | list[Any]:
    """The rows as their columns (rows_table), when they all have the same keys in the same order (else
    the list itself): a column whose every value is an object is stored by its objects' shapes."""
    if not rows:
        return list(rows)
    keys = tuple(rows[0])
    if any(tuple(row) != keys for row in rows):
        return list(rows)
    columns: dict[str, Any] = {}
    for key in keys:
        cells = [row[key] for row in rows]
        if not all(type(cell) is dict for cell in cells):
            columns[key] = cells
            continue
        shapes: dict[tuple[str, ...], int] = {}
        shape = [shapes.setdefault(tuple(cell), len(shapes)) for cell in cells]
        values: list[list[Any]] = [[] for _ in shapes]
        for k, cell in zip(shape, cells, strict=True):
            values[k].extend(cell.values())
        columns[key] = grouped_column(list(shapes), shape, values)
    return rows_table(len(rows), columns)


def is_table(value: Any) -> bool:
    return isinstance(value, dict) and TABLE_ROWS in value and TABLE_COLUMNS in value and len(value) == 2


class RowsField(JSONBField):
    """A list of rows (dicts), which a writer may store as its columns (rows_table): read back, it is the
    list of rows either way, as a list stored as such would read (its objects' keys in jsonb's order)."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        value = super().from_db_value(value, expression, connection)
        return table_rows(value, as_jsonb=True) if is_table(value) else value

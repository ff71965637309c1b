"""core.jsonb and api.renderers: orjson's JSON is the JSON json.dumps and DRF's renderer wrote, as the
database stores it and as a client reads it."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pytest
from django.db import connection
from django.db.models import CharField, F, Func
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer

from api.renderers import OrjsonRenderer
from core.jsonb import JSONBField, RowsField, dumps, grouped_column, rows_as_table, rows_table, table_rows

# What a trace and an answer hold: nested objects of text (any Unicode PostgreSQL stores), numbers of
# every magnitude, booleans and nulls.
_TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=20)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from([1e-7, 5e-6, 1e16, -0.0, 5e-324, 1e308])
_SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _FLOATS | _TEXT
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_TEXT, inner, max_size=5), max_leaves=40
)


@pytest.mark.django_db
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_VALUES)
def test_the_database_stores_what_json_dumps_would_have_stored(value: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text, %s::jsonb::text", [json.dumps(value), dumps(value).decode()])
        by_json, by_orjson = cursor.fetchone()
    assert by_orjson == by_json


def test_what_orjson_refuses_or_asks_about_is_encoded_as_json_dumps_does() -> None:
    for value in ({1: "a", None: 2, False: 3, 2.5: 4}, [2**70], {"x": np.float64(0.25)}, [float(np.float64(1e-7))]):
        assert json.loads(dumps(value)) == json.loads(json.dumps(value))
    with pytest.raises(TypeError):
        dumps({"when": object()})


@pytest.mark.django_db
def test_a_jsonb_field_reads_back_what_it_was_given(tenant_a) -> None:
    from router.models import ContextTrace
    from tenants.scope import tenant_scope

    items = [{"id": "episode:1", "score": 1e-7, "text": "café \u2028 ☕", "parts": {"a": 0.1, "b": -0.0}}]
    assert isinstance(ContextTrace._meta.get_field("considered"), JSONBField)
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.create(tenant=tenant_a, subject="s", policy="p", considered=items)
        assert ContextTrace.objects.get(id=trace.id).considered == items
        ContextTrace.objects.filter(id=trace.id).update(offered=items)
        assert ContextTrace.objects.filter(offered__0__id="episode:1").count() == 1


def _both(data: Any) -> tuple[bytes, bytes]:
    return OrjsonRenderer().render(data), JSONRenderer().render(data)


@settings(max_examples=300, deadline=None)
@given(value=_VALUES)
def test_the_answer_is_the_json_drfs_renderer_wrote(value: Any) -> None:
    ours, drfs = _both(value)
    assert (json.loads(ours) if ours else None) == (json.loads(drfs) if drfs else None)


def test_the_answer_writes_dates_decimals_and_line_separators_as_drf_does() -> None:
    data = {
        "at": datetime(2026, 12, 6, 16, 0, 1, 5, tzinfo=UTC),
        "naive": datetime(2026, 12, 6, 16, 0),
        "local": datetime(2026, 7, 6, 16, 0, tzinfo=UTC).astimezone(ZoneInfo("Europe/Lisbon")),
        "day": date(2026, 12, 6),
        "span": timedelta(seconds=90),
        "price": Decimal("1.50"),
        "id": uuid.UUID(int=7),
        "text": "a\u2028b\u2029c é",
        "array": np.array([1.5, 2.0]),
        "number": np.float64(0.25),
    }
    ours, drfs = _both(data)
    assert ours == drfs
    assert OrjsonRenderer().render(None) == JSONRenderer().render(None) == b""


def test_an_indented_answer_and_what_orjson_refuses_go_to_drf() -> None:
    for value in ({"big": 2**70}, {"x": [1, 2]}):
        assert OrjsonRenderer().render(value, "application/json; indent=2") == JSONRenderer().render(
            value, "application/json; indent=2"
        )
    assert OrjsonRenderer().render({"big": 2**70}) == JSONRenderer().render({"big": 2**70})
    with pytest.raises(TypeError):
        OrjsonRenderer().render({"x": object()})


def test_keys_that_are_not_strings_are_written_as_json_and_drf_write_them() -> None:
    # Asked of orjson only when a document has one (core.jsonb.OPTIONS): the same text either way.
    for value in ({1: "a", None: 2, False: 3, 2.5: 4}, {"nested": [{7: {"x": 1}}]}, {"s": {"t": 1}}):
        assert dumps(value) == json.dumps(value, separators=(",", ":")).encode()
        ours, drfs = _both(value)
        assert ours == drfs


def test_a_float_that_is_not_a_number_is_written_null_where_json_wrote_nan() -> None:
    # The one difference (core.jsonb, api.renderers): json's NaN made PostgreSQL and DRF refuse it.
    assert dumps({"score": float("nan")}) == b'{"score":null}'
    assert OrjsonRenderer().render({"score": float("inf")}) == b'{"score":null}'


def _as_table(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The rows as their columns (core.jsonb.rows_table): the objects of a column by their keys' shapes."""
    columns: dict[str, Any] = {}
    for key in rows[0] if rows else ():
        cells = [row[key] for row in rows]
        if all(isinstance(cell, dict) for cell in cells):
            shapes: dict[tuple[str, ...], int] = {}
            shape = [shapes.setdefault(tuple(cell), len(shapes)) for cell in cells]
            values: list[list[Any]] = [[] for _ in shapes]
            for k, cell in zip(shape, cells, strict=True):
                values[k].extend(cell.values())
            columns[key] = grouped_column([list(keys) for keys in shapes], shape, values)
        else:
            columns[key] = cells
    return rows_table(len(rows), columns)


# Rows of one shape at the top (as a trace's), one column of objects of several shapes among them.
_ROWS = st.tuples(st.lists(_TEXT, unique=True, max_size=6), st.lists(_TEXT, unique=True, max_size=4)).flatmap(
    lambda keys: st.lists(
        st.fixed_dictionaries(
            {
                **{key: _SCALARS for key in keys[0] if key != "parts"},
                "parts": st.sampled_from([keys[1], keys[1][::-1], keys[1][:1], []]).flatmap(
                    lambda names: st.fixed_dictionaries({name: _SCALARS for name in names})
                ),
            }
        ),
        max_size=8,
    )
)


@pytest.mark.django_db
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_ROWS)
def test_rows_stored_as_their_columns_read_back_as_the_rows_stored_as_a_list(tenant_a, rows: Any) -> None:
    """A RowsField's rows read back the same, to the order of every object's keys and the text of every
    number, whether they were stored as a list or as their columns."""
    from router.models import ContextTrace
    from tenants.scope import tenant_scope

    assert isinstance(ContextTrace._meta.get_field("considered"), RowsField)
    with tenant_scope(tenant_a):
        as_list = ContextTrace.objects.create(tenant=tenant_a, subject="s", policy="p", considered=rows)
        as_table = ContextTrace.objects.create(
            tenant=tenant_a, subject="s", policy="p", considered=_as_table(rows), offered=rows_as_table(rows)
        )
        stored = {t.id: t for t in ContextTrace.objects.filter(id__in=[as_list.id, as_table.id])}
        kind = ContextTrace.objects.filter(id=as_table.id).values_list(
            Func(F("considered"), function="jsonb_typeof", output_field=CharField())
        )
        assert list(kind) == [("object",)]
    assert json.dumps(stored[as_table.id].considered) == json.dumps(stored[as_list.id].considered)
    assert json.dumps(stored[as_table.id].offered) == json.dumps(stored[as_list.id].considered)
    assert table_rows(_as_table(rows)) == rows

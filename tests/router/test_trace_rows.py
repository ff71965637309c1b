"""A trace's rows of the candidates left out: their numbers rounded a column at a time, as round() rounds them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import CharField, F, Func, TextField
from django.db.models.functions import Cast, Length

from router.features import logged_fields
from router.models import ContextTrace
from router.services import considered_dict, considered_dicts
from router.types import Candidate
from tenants.scope import tenant_scope
from tests.router.conftest import remember

NOW = datetime(2024, 3, 1, 12, tzinfo=UTC)
# Halves in decimal that are not halves in binary, values past the fast path's range, negatives.
AWKWARD = [2.675, 1.0000005, 0.0000005, -0.1234565, 3.0e9 + 0.5, 1e-12, 0.3333335, 7.0, -2.5e-7, 123456.7890125]


def _items() -> list[Candidate]:
    return [
        Candidate(
            id=f"episode:{i}",
            type="episode",
            layer="episodic",
            section="Relevant history",
            text="user: a line",
            value=value,
            score=AWKWARD[-1 - i],
            # Most items have the same names (as a pool's search hits do), in another order than sorted.
            score_parts={"vector": AWKWARD[(i + 3) % len(AWKWARD)], "text": value / 3, "b": 2.5e-7 * i},
            occurred_at=NOW - timedelta(days=1.37 * i),
            line_tokens=5 + i,
            requires=frozenset({"x"}) if i % 3 == 0 else frozenset(),
        )
        for i, value in enumerate(AWKWARD)
    ]


def test_left_out_items_are_traced_with_their_numbers_rounded_as_round_does() -> None:
    items = _items()
    chance = {"episode:0": 0.0000005, "episode:4": 2.675, "episode:9": 1.0000005}
    expected = [
        {
            "id": c.id,
            "type": c.type,
            "tokens": c.line_tokens,
            "score": round(c.score, 6),
            "value": round(c.value, 6),
            "score_parts": {k: round(float(v), 6) for k, v in sorted(c.score_parts.items())},
            **logged_fields(c, now=NOW),
            "propensity": round(chance.get(c.id, 0.0), 6),
        }
        for c in items
    ]
    assert considered_dicts(items, propensity=chance, now=NOW) == expected
    assert [considered_dict(c, propensity=chance.get(c.id, 0.0), now=NOW) for c in items] == expected
    assert [list(row["score_parts"]) for row in expected] == [["b", "text", "vector"]] * len(items)


def test_left_out_items_with_other_score_parts_keep_their_own_in_order() -> None:
    """Items whose score parts have other names (summaries, neighbours, facts, none), among those that
    share theirs: each row has its own, sorted by name, rounded as round() rounds them."""
    items = _items()
    others = [{"session_relevance": 0.1234565}, {}, {"relevance": 2.675, "neighbour_of": 17.0}, {"a": 1e-12}]
    for i, parts in zip((1, 4, 6, 8), others, strict=True):
        items[i].score_parts = parts
    rows = considered_dicts(items, propensity={}, now=NOW)
    assert [row["score_parts"] for row in rows] == [
        {k: round(float(v), 6) for k, v in sorted(c.score_parts.items())} for c in items
    ]
    assert [list(row["score_parts"]) for row in rows] == [sorted(c.score_parts) for c in items]
    assert rows == [considered_dict(c, propensity=0.0, now=NOW) for c in items]


@pytest.mark.django_db
@pytest.mark.isolation("context", "trace-detail")
def test_a_trace_stores_its_left_out_rows_as_columns_and_answers_them_as_rows(tenant_a, api_a) -> None:
    """The left-out rows are stored as their columns, in about half the text of the rows (each key once
    instead of once per row); the trace's answer and its readers get the rows, as a list stored would
    have read them back."""
    remember(tenant_a, [f"note {i}: the printer on floor {i} jams on tray {i % 3}" for i in range(40)])
    body = api_a.post("/v1/context", {"subject": "alice", "query": "printer tray jams", "max_tokens": 300}).json()
    rows = api_a.get(f"/v1/traces/{body['trace_id']}").json()["considered"]
    assert len(rows) > 10
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.filter(id=body["trace_id"])
        ((kind, stored),) = trace.values_list(
            Func(F("considered"), function="jsonb_typeof", output_field=CharField()),
            Length(Cast(F("considered"), TextField())),
        )
        assert trace.get().considered == rows
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [json.dumps(rows)])
        (as_list,) = cursor.fetchone()
    assert kind == "object"
    assert stored < 0.6 * len(as_list)
    # The answer's rows are those a list stored would give back, to the order of their keys.
    assert json.dumps(rows) == json.dumps(json.loads(as_list))

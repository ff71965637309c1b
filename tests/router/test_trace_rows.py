"""A trace's rows of the candidates left out: their numbers rounded a column at a time, as round() rounds them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import CharField, F, Func, TextField
from django.db.models.functions import Cast, Length
from django.test.utils import CaptureQueriesContext

from router.features import logged_fields
from router.models import ContextTrace
from router.services import considered_dict, considered_dicts, item_dict, served_rows, traced_dict
from router.types import Candidate, Source
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


def test_served_items_are_shown_and_traced_with_their_numbers_rounded_as_round_does() -> None:
    """served_rows: the answer's items (item_dict) and the trace's rows of them (traced_dict, and during a
    trial each one's chances), the same dicts, to the order of their keys, built a column at a time."""
    items = _items()
    items[1].score_parts = {"session_relevance": 0.1234565}
    items[4].score_parts = {}
    items[2].sources = [Source(episode_id=7, external_id="m-7", occurred_at=NOW, session="s", span=(0, 4))]
    chance = {"episode:0": 0.0000005, "episode:4": 2.675, "episode:9": 1.0000005}
    policies = ({"episode:2": 2.675, "episode:3": 1e-12}, {"episode:2": 0.3333335})
    for by_policy in (None, policies):
        shown, rows = served_rows(items, propensity=chance, now=NOW, by_policy=by_policy)
        expected = {c.id: item_dict(c) for c in items}
        assert [list(d.items()) for d in shown.values()] == [list(d.items()) for d in expected.values()]
        traced = [
            traced_dict(c, expected[c.id], propensity=chance.get(c.id, 1.0), now=NOW)
            | (
                {}
                if by_policy is None
                else {
                    "p_formula": round(by_policy[0].get(c.id, 0.0), 6),
                    "p_model": round(by_policy[1].get(c.id, 0.0), 6),
                }
            )
            for c in items
        ]
        assert [list(row.items()) for row in rows] == [list(row.items()) for row in traced]


@pytest.mark.django_db
@pytest.mark.isolation("context", "trace-detail")
def test_a_trace_stores_its_rows_as_columns_and_answers_them_as_rows(tenant_a, api_a) -> None:
    """The served and left-out rows are stored as their columns, the left-out ones in about half the text
    of the rows (each key once instead of once per row); the trace's answer and its readers get the rows,
    as a list stored would have read them back."""
    remember(tenant_a, [f"note {i}: the printer on floor {i} jams on tray {i % 3}" for i in range(40)])
    body = api_a.post("/v1/context", {"subject": "alice", "query": "printer tray jams", "max_tokens": 300}).json()
    answer = api_a.get(f"/v1/traces/{body['trace_id']}").json()
    rows, served = answer["considered"], answer["offered"]
    assert len(rows) > 10 and [row["id"] for row in served] == [i["id"] for i in body["layers"]["episodic"]]
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.filter(id=body["trace_id"])
        ((kind, stored, served_kind),) = trace.values_list(
            Func(F("considered"), function="jsonb_typeof", output_field=CharField()),
            Length(Cast(F("considered"), TextField())),
            Func(F("offered"), function="jsonb_typeof", output_field=CharField()),
        )
        assert trace.get().considered == rows and trace.get().offered == served
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text, %s::jsonb::text", [json.dumps(rows), json.dumps(served)])
        as_list, served_as_list = cursor.fetchone()
    assert kind == served_kind == "object"
    assert stored < 0.6 * len(as_list)
    # The answer's rows are those a list stored would give back, to the order of their keys.
    assert json.dumps(rows) == json.dumps(json.loads(as_list))
    assert json.dumps(served) == json.dumps(json.loads(served_as_list))


@pytest.mark.django_db
def test_a_traces_documents_reach_the_database_as_parameters_not_in_the_statements_text(tenant_a, api_a) -> None:
    """The items' documents (tens of kilobytes a request) are bound by the server: the statement's text
    does not carry them as literals, which the driver quoted into it and PostgreSQL scanned back out.
    Read back, the rows are those the answer served."""
    remember(tenant_a, [f"note {i}: the scanner on floor {i} skips page {i % 4}" for i in range(30)])
    with CaptureQueriesContext(connection) as sent:
        body = api_a.post("/v1/context", {"subject": "alice", "query": "scanner skips pages", "max_tokens": 200}).json()
    (update,) = [q["sql"] for q in sent.captured_queries if "UPDATE" in q["sql"] and "router_contexttrace" in q["sql"]]
    served = body["layers"]["episodic"]
    assert served and "$1" in update
    assert served[0]["text"] not in update and len(update) < 300
    with tenant_scope(tenant_a):
        trace = ContextTrace.objects.get(id=body["trace_id"])
    assert [row["text"] for row in trace.offered] == [item["text"] for item in served]
    assert trace.considered

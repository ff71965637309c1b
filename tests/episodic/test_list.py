"""GET /v1/episodes: ordering, filters, cursor pagination."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.episodic.conftest import T0, item, timeline

pytestmark = pytest.mark.django_db


def _all_pages(api, params: dict) -> list[dict]:
    out: list[dict] = []
    response = api.get("/v1/episodes", params)
    while True:
        assert response.status_code == 200, response.json()
        body = response.json()
        out.extend(body["results"])
        if not body["next"]:
            return out
        response = api.get(body["next"])


def test_newest_first_by_default_and_oldest_first_on_request(api_a, append, tenant_a) -> None:
    append(tenant_a, timeline(5))
    newest = [e["content"] for e in api_a.get("/v1/episodes").json()["results"]]
    assert newest == ["event 4", "event 3", "event 2", "event 1", "event 0"]
    oldest = [e["content"] for e in api_a.get("/v1/episodes", {"order": "asc"}).json()["results"]]
    assert oldest == list(reversed(newest))


def test_order_is_by_occurrence_not_by_arrival(api_a, append, tenant_a) -> None:
    append(tenant_a, [item("late arrival, early event", occurred_at=T0.isoformat())])
    append(tenant_a, [item("early arrival, late event", occurred_at=(T0 + timedelta(hours=1)).isoformat())])
    first = api_a.get("/v1/episodes").json()["results"][0]
    assert first["content"] == "early arrival, late event"


def test_cursor_pages_cover_everything_once_including_ties(api_a, append, tenant_a) -> None:
    # Ten episodes share each timestamp: the cursor must not skip or repeat within a tie.
    items = [item(f"e{i}", occurred_at=(T0 + timedelta(minutes=i // 10)).isoformat()) for i in range(47)]
    append(tenant_a, items)
    for order in ("desc", "asc"):
        seen = _all_pages(api_a, {"limit": 6, "order": order})
        assert sorted(e["content"] for e in seen) == sorted(f"e{i}" for i in range(47))
        assert len({e["id"] for e in seen}) == 47
        keys = [(e["occurred_at"], e["id"]) for e in seen]
        assert keys == sorted(keys, reverse=(order == "desc"))


def test_filters(api_a, append, tenant_a) -> None:
    append(
        tenant_a,
        [
            item(
                "Alice paid invoice",
                session="s-1",
                agent="billing-bot",
                entities=["acme"],
                topics=["billing"],
                occurred_at=T0.isoformat(),
            ),
            item("tool ran", session="s-1", kind="tool_call", occurred_at=(T0 + timedelta(hours=1)).isoformat()),
            item("Bob speaks", subject="bob", session="s-2", occurred_at=(T0 + timedelta(hours=2)).isoformat()),
        ],
    )

    def contents(**params) -> list[str]:
        response = api_a.get("/v1/episodes", params)
        assert response.status_code == 200, response.json()
        return [e["content"] for e in response.json()["results"]]

    assert contents(subject="bob") == ["Bob speaks"]
    assert contents(session="s-1") == ["tool ran", "Alice paid invoice"]
    assert contents(agent="billing-bot") == ["Alice paid invoice"]
    assert contents(kind="tool_call") == ["tool ran"]
    assert contents(entity="ACME") == ["Alice paid invoice"]
    assert contents(topic="billing") == ["Alice paid invoice"]
    assert contents(since=(T0 + timedelta(hours=1)).isoformat()) == ["Bob speaks", "tool ran"]
    assert contents(until=(T0 + timedelta(hours=1)).isoformat()) == ["Alice paid invoice"]
    assert contents(subject="alice", session="s-2") == []


@pytest.mark.parametrize(
    ("params", "pointer"),
    [({"since": "2024-05-01T12:00:00"}, "/since"), ({"kind": "gossip"}, "/kind"), ({"order": "sideways"}, "/order")],
)
def test_bad_filters_are_problems(api_a, params, pointer) -> None:
    response = api_a.get("/v1/episodes", params)
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == pointer


def test_list_needs_read_scope_and_a_key(anon_api) -> None:
    assert anon_api.get("/v1/episodes").status_code == 401


def test_a_page_is_one_query(api_a, append, tenant_a) -> None:
    append(tenant_a, [item(f"e{i}", session=f"s-{i % 5}") for i in range(120)])
    with CaptureQueriesContext(connection) as queries:
        response = api_a.get("/v1/episodes", {"limit": 100})
    assert len(response.json()["results"]) == 100
    ours = [q["sql"] for q in queries.captured_queries if "episodic_" in q["sql"]]
    assert len(ours) == 1, ours  # the page with its sessions joined; the rest is authentication
    assert '"embedding"' not in ours[0].split("FROM")[0].replace('"embedding" IS NOT NULL', "")
    assert response.json()["results"][0]["embedded"] is False

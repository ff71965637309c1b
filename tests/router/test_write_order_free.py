"""The same memories give the same context, whatever ids their writes drew. A fact's id is a random UUID;
two facts that the router values equally (each capped at the least line of history, because history did
not find the turn that told it: router.candidates.semantic.fact_worth) must not be ordered by it, or two
writes of one conversation serve different facts (technical set, conversation 14: "Who is the user's
employer?" was served "works at Acme Robotics" by one write and "prefers nose2 for tests" by another)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from semantic.models import Fact
from tenants.models import Tenant
from tests.router.conftest import believe, remember
from tests.router.test_fact_worth import HISTORY, QUERY

# Two facts told in turns that history does not find for the query, of the same length once rendered.
FACTS = (
    ("game", "chess", "Alice does play chess on Sundays.", 2),
    ("sport", "bingo", "Alice does play bingo on Sundays.", 6),
)
# Ids are unique across tenants: each write draws its own, in opposite orders.
LOW, LOWER = uuid.UUID(int=2), uuid.UUID(int=1)
HIGH, HIGHER = uuid.UUID(int=2**128 - 2), uuid.UUID(int=2**128 - 1)


def _write(tenant: Tenant, ids: dict[str, uuid.UUID], monkeypatch: pytest.MonkeyPatch) -> None:
    episodes = remember(tenant, HISTORY)
    field = Fact._meta.get_field("id")
    for attribute, value, statement, source in FACTS:
        # Django reads a field's default through _get_default.
        monkeypatch.setattr(field, "_get_default", lambda fixed=ids[value]: fixed)
        believe(tenant, attribute=attribute, value=value, statement=statement, sources=[episodes[source]])
    monkeypatch.undo()


def _served(api: APIClient, budget: int) -> list[str]:
    body: dict[str, Any] = api.post(
        "/v1/context",
        {"subject": "alice", "query": QUERY, "max_tokens": budget, "budgets": {"reserve": 0, "episodic": budget}},
        format="json",
    ).json()
    return [item["text"] for layer in ("semantic", "episodic") for item in body["layers"][layer]]


@pytest.mark.django_db
def test_two_writes_that_drew_ids_in_opposite_orders_serve_the_same_context(
    tenant_a: Tenant, tenant_b: Tenant, api_a: APIClient, api_b: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write(tenant_a, {"chess": LOW, "bingo": HIGH}, monkeypatch)
    _write(tenant_b, {"chess": HIGHER, "bingo": LOWER}, monkeypatch)
    served_some_not_all = 0
    for budget in range(100, 400, 10):
        a, b = _served(api_a, budget), _served(api_b, budget)
        assert a == b, budget
        served_some_not_all += sum(statement in " ".join(a) for _, _, statement, _ in FACTS) == 1
    # The case the test is for occurred: a budget with room for one of the two facts, not both.
    assert served_some_not_all

"""Semantic memory's write paths from eight threads at once: upsert, confirm, correct, review, revert.
Each answer is a success or a documented refusal (409, 412), never a 5xx; the final state is the one
some serial order of the successful requests gives."""

from __future__ import annotations

from collections import Counter
from typing import Any

import httpx
import pytest

from tests.concurrency.conftest import THREADS, Hammer, ok, statuses

pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]


def _fact(**fields: Any) -> dict[str, Any]:
    return {"subject": "u1", "entity": "u1", "category": "other", "confidence": 0.9, **fields}


def _kinds(api: httpx.Client, fact_id: str) -> Counter[str]:
    return Counter(c["kind"] for c in ok(api.get(f"/v1/facts/{fact_id}/history"))["changes"])


def test_confirms_and_upserts_of_one_fact_at_once_do_not_deadlock_or_lose_a_confirmation(
    hammer: Hammer, api: httpx.Client
) -> None:
    # The confirm locked the fact's row, then its (entity, attribute) slot; an upsert took the slot and
    # then the row: a deadlock, answered 500. Both now take the slot first (tenants/locks.py).
    body = _fact(attribute="city", value="Porto", statement="u1 lives in Porto.", cardinality="single")
    fact = ok(api.post("/v1/facts", json=body))["fact"]
    confirm: Any = lambda c: c.post(f"/v1/facts/{fact['id']}/confirm")  # noqa: E731
    upsert: Any = lambda c: c.post("/v1/facts", json=body)  # noqa: E731
    rounds = 4
    for _ in range(rounds):
        answers = hammer.run([confirm, upsert] * (THREADS // 2))
        assert statuses(answers) == [200] * THREADS

    after = ok(api.get(f"/v1/facts/{fact['id']}"))
    assert after["confirmation_count"] - fact["confirmation_count"] == rounds * THREADS
    assert _kinds(api, fact["id"])["confirmed"] == rounds * THREADS


def test_one_new_fact_upserted_from_eight_threads_is_created_once_and_confirmed_by_the_rest(
    hammer: Hammer, api: httpx.Client
) -> None:
    body = _fact(attribute="employer", value="Acme", statement="u1 works at Acme.", cardinality="single")
    answers = hammer.same(lambda c: c.post("/v1/facts", json=body))
    assert statuses(answers) == [200] * (THREADS - 1) + [201]
    assert len({a.json()["fact"]["id"] for a in answers}) == 1
    fact_id = answers[0].json()["fact"]["id"]
    assert _kinds(api, fact_id) == Counter({"created": 1, "confirmed": THREADS - 1})


def test_values_of_a_single_valued_attribute_from_eight_threads_end_with_the_latest_observed_active(
    hammer: Hammer, api: httpx.Client
) -> None:
    def call(i: int) -> Any:
        body = _fact(
            attribute="team",
            value=f"team-{i}",
            statement=f"u1 is in team {i}.",
            cardinality="single",
            valid_from=f"2026-01-0{i + 1}T00:00:00Z",
        )
        return lambda c: c.post("/v1/facts", json=body)

    answers = hammer.run([call(i) for i in range(THREADS)])
    assert all(a.status_code in (200, 201) for a in answers)
    live = ok(api.get("/v1/facts", params={"entity": "u1", "attribute": "team"}))["results"]
    assert [f["value"] for f in live if f["status"] == "active"] == [f"team-{THREADS - 1}"]


def test_eight_confirms_at_once_each_count(hammer: Hammer, api: httpx.Client) -> None:
    fact = ok(api.post("/v1/facts", json=_fact(attribute="pet", value="cat", statement="u1 has a cat.")))["fact"]
    answers = hammer.same(lambda c: c.post(f"/v1/facts/{fact['id']}/confirm"))
    assert statuses(answers) == [200] * THREADS
    after = ok(api.get(f"/v1/facts/{fact['id']}"))
    assert after["confirmation_count"] - fact["confirmation_count"] == THREADS


def test_eight_corrections_at_once_chain_without_a_lost_update(hammer: Hammer, api: httpx.Client) -> None:
    fact = ok(api.post("/v1/facts", json=_fact(attribute="car", value="red", statement="u1 drives red.")))["fact"]

    def call(i: int) -> Any:
        return lambda c: c.patch(f"/v1/facts/{fact['id']}", json={"value": f"colour-{i}"})

    answers = hammer.run([call(i) for i in range(THREADS)])
    assert statuses(answers) == [200] * THREADS
    edits = [c for c in ok(api.get(f"/v1/facts/{fact['id']}/history"))["changes"] if c["kind"] == "edited"]
    assert len(edits) == THREADS
    # Some serial order: each correction starts from the value the one before it left.
    chain = ["red"] + [e["new_value"] for e in edits]
    assert [e["old_value"] for e in edits] == chain[:-1]
    assert ok(api.get(f"/v1/facts/{fact['id']}"))["value"] == chain[-1]


def test_eight_approvals_of_one_pending_fact_approve_it_once(hammer: Hammer, api: httpx.Client) -> None:
    body = _fact(attribute="nickname", value="Y", statement="u1 is called Y.", confidence=0.2)
    fact = ok(api.post("/v1/facts", json=body))["fact"]
    assert fact["status"] == "pending_review"
    answers = hammer.same(lambda c: c.post(f"/v1/facts/{fact['id']}/review", json={"approve": True}))
    assert statuses(answers) == [200] + [409] * (THREADS - 1)
    assert _kinds(api, fact["id"])["review_approved"] == 1


def test_eight_reverts_of_one_change_revert_it_once(hammer: Hammer, api: httpx.Client) -> None:
    first = _fact(attribute="home", value="Porto", statement="u1 lives in Porto.", cardinality="single")
    ok(api.post("/v1/facts", json=first))
    moved = ok(api.post("/v1/facts", json={**first, "value": "Lisbon", "statement": "u1 lives in Lisbon."}))
    assert moved["action"] == "superseded", moved
    change = next(
        c for c in ok(api.get(f"/v1/facts/{moved['previous']['id']}/history"))["changes"] if c["kind"] == "superseded"
    )
    answers = hammer.same(lambda c: c.post(f"/v1/fact-changes/{change['id']}/revert"))
    # One revert writes (201); the others find it reverted and answer it as it stands (200).
    assert statuses(answers) == [200] * (THREADS - 1) + [201]
    live = ok(api.get("/v1/facts", params={"entity": "u1", "attribute": "home"}))["results"]
    assert len([f for f in live if f["status"] == "active"]) == 1

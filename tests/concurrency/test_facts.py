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

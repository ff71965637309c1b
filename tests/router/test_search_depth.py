"""How deep history's search goes, seen through POST /v1/context and the trace it leaves: a session's
summary takes no place of the pool, and the layers asked for do not change the depth."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from consolidation.services import session_summarise
from episodic.models import SESSION_SUMMARY_EXTERNAL_ID, Passage, Session, SessionStatus
from tenants.scope import tenant_scope
from tests.router.conftest import T0, remember

pytestmark = pytest.mark.django_db

SESSIONS = 20
LAKES = ["Garda", "Como", "Bled", "Annecy", "Hallstatt"]


@pytest.fixture
def trips(tenant_a, offline_extractor) -> None:
    """20 ended, summarised sessions of three turns, every turn about a kayak trip: 60 turns and 20
    summaries (which repeat the turns' words) match the query below."""
    for n in range(SESSIONS):
        lake = LAKES[n % len(LAKES)]
        name = f"trip-{n}"
        remember(
            tenant_a,
            [
                f"Kayak trip {n}: we paddled across lake {lake} at dawn.",
                f"The kayak rental at {lake} asked for a deposit of {20 + n} euros.",
                f"Next kayak trip we bring a dry bag for the phones, trip {n}.",
            ],
            session=name,
            start=T0 + timedelta(days=n),
        )
        with tenant_scope(tenant_a):
            session = Session.objects.for_tenant(tenant_a).get(external_id=name)
            session.status, session.ended_at = SessionStatus.ENDED, T0 + timedelta(days=n, hours=1)
            session.save(update_fields=["status", "ended_at"])
            assert session_summarise(tenant=tenant_a, session_id=session.pk) is not None


def _search_hits(api_a: Any, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The candidates the search found (score part `fused`), offered or left out, from the trace."""
    trace = api_a.get(f"/v1/traces/{body['trace_id']}").json()
    items = [*trace["offered"], *trace["considered"]]
    return [item for item in items if "fused" in item.get("score_parts", {})]


def test_a_sessions_summary_takes_no_place_of_historys_search(tenant_a, api_a, ask, trips) -> None:
    with tenant_scope(tenant_a):
        summaries = Passage.objects.filter(episode__external_id=SESSION_SUMMARY_EXTERNAL_ID)
        assert summaries.count() >= SESSIONS and not summaries.filter(summary=False).exists()
    # 120 tokens of memory, history alone: the search's smallest pool, 30, where 80 passages match.
    body = ask(query="kayak trip lake", max_tokens=120, budgets={"reserve": 0}, layers=["episodic", "working"])
    hits = _search_hits(api_a, body)
    assert len(hits) == 30
    assert all(item["id"].startswith(("episode:", "passage:")) for item in hits)
    served = [s for item in body["layers"]["episodic"] for s in item["sources"]]
    assert served and all(s["external_id"] != SESSION_SUMMARY_EXTERNAL_ID for s in served)


def test_an_episodic_only_context_searches_as_deep_as_a_full_one(api_a, ask, trips) -> None:
    query = {"query": "kayak trip lake", "max_tokens": 400, "budgets": {"reserve": 0}}
    full = _search_hits(api_a, ask(**query))
    episodic_only = _search_hits(api_a, ask(**query, layers=["episodic", "working"]))
    # 400 tokens of memory search 100 deep, whichever layers are asked for: all 60 turns.
    assert len(full) == len(episodic_only) == SESSIONS * 3
    assert {item["id"] for item in full} == {item["id"] for item in episodic_only}

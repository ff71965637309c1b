"""A context that earns its tokens, through POST /v1/context: absolute relevance floors per layer, no
fact whose value is a fragment, no session summary beside the turns it repeats, and what the facts
layer leaves unused goes to the episodes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from consolidation.services import session_summarise
from core.tokens import count_tokens
from episodic.models import SESSION_SUMMARY_EXTERNAL_ID, Session, SessionStatus
from router.candidates.common import HeuristicWeights
from router.candidates.episodic import settle_episodes
from router.packing import pack_layer
from router.types import Candidate, Source
from semantic.models import FactOrigin
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate
from tenants.scope import tenant_scope
from tests.router.conftest import T0, believe, remember

pytestmark = pytest.mark.django_db

HISTORY: list[str | tuple[str, str]] = [
    "My printer keeps jamming on the second tray",
    ("assistant", "Try removing the second tray and cleaning the rollers"),
    "We moved the office to Lisbon last spring",
    "I adopted a dog called Biscuit",
    ("assistant", "Congratulations on Biscuit!"),
    "The VPN drops every evening around six",
]


def _ids(body: dict[str, Any], layer: str) -> list[str]:
    return [item["id"] for item in body["layers"][layer]]


def test_a_query_with_nothing_relevant_gets_a_context_shorter_than_its_budget(tenant_a, ask) -> None:
    episodes = remember(tenant_a, HISTORY)
    believe(
        tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog called Biscuit.", sources=episodes[3:4]
    )
    believe(tenant_a, attribute="city", value="Lisbon", statement="Alice's office is in Lisbon.")

    nothing = ask(query="quantum chromodynamics lattice gauge", max_tokens=4000)
    assert nothing["layers"]["semantic"] == [] and nothing["layers"]["episodic"] == []
    assert nothing["tokens"]["total"] == count_tokens(nothing["prompt"]) == 0
    assert nothing["budgets"]["granted"]["episodic"] > 0

    # The same store answers a query that it has something for.
    something = ask(query="where is the office now?", max_tokens=4000)
    assert any("Lisbon" in item["text"] for item in something["layers"]["semantic"])
    assert 0 < something["tokens"]["total"] < something["budgets"]["memory"]


def test_the_recent_events_of_the_session_are_offered_whatever_the_query(tenant_a, ask) -> None:
    remember(tenant_a, HISTORY[:2], session="now")
    body = ask(query="quantum chromodynamics lattice gauge", session="now")
    assert {item["text"] for item in body["layers"]["episodic"]} == {
        "user: My printer keeps jamming on the second tray",
        "assistant: Try removing the second tray and cleaning the rollers",
    }


def test_a_fact_whose_value_is_a_fragment_is_not_served(tenant_a, ask) -> None:
    # Extracted before extraction rejected fragments: "likes = 13)" and "uses = want" are noise.
    believe(tenant_a, attribute="likes", value="13)", statement="Alice likes 13).")
    believe(tenant_a, attribute="uses", value="want", statement="Alice uses want.")
    believe(tenant_a, attribute="likes", value="kayaking", statement="Alice likes kayaking.")
    with tenant_scope(tenant_a):
        # A value a client wrote is served as written, a bare number included.
        fact_upsert(
            tenant=tenant_a,
            candidate=FactCandidate(
                subject="alice",
                entity="alice",
                attribute="likes_count",
                value="12",
                statement="Alice likes 12 kinds of tea.",
                category="preferences",
                confidence=0.9,
                origin=FactOrigin.API,
            ),
            actor=Actor(),
        )
    for query in ("what does alice like and use?", ""):
        texts = [item["text"] for item in ask(query=query)["layers"]["semantic"]]
        assert any("kayaking" in t for t in texts) and any("12 kinds of tea" in t for t in texts)
        assert not any("13)" in t or "uses want" in t for t in texts)


def _ended_and_summarised(tenant, session_id: str) -> Session:
    with tenant_scope(tenant):
        session = Session.objects.for_tenant(tenant).get(external_id=session_id)
        session.status, session.ended_at = SessionStatus.ENDED, T0 + timedelta(hours=1)
        session.save(update_fields=["status", "ended_at"])
        assert session_summarise(tenant=tenant, session_id=session.pk) is not None
        return session


@pytest.mark.usefixtures("offline_extractor")
def test_a_session_summary_is_not_served_beside_the_turns_it_repeats(tenant_a, ask) -> None:
    turns = remember(
        tenant_a,
        ["We are planning a kayak trip to the Dolomites lakes in July.", "The kayak rental shop needs a deposit."],
        session="trip-1",
    )
    _ended_and_summarised(tenant_a, "trip-1")
    body = ask(query="kayak trip deposit", session="later", max_tokens=2000)
    items = body["layers"]["episodic"]
    # The offline summariser repeats the turns ("user: We are planning ... user: The kayak ..."): the
    # turns are served, neither the summary episode nor the session's summary beside them.
    assert {f"episode:{e.id}" for e in turns} <= set(_ids(body, "episodic"))
    assert not any(s["external_id"] == SESSION_SUMMARY_EXTERNAL_ID for item in items for s in item["sources"])
    assert "summary:trip-1" not in _ids(body, "episodic")
    assert body["prompt"].count("The kayak rental shop needs a deposit.") == 1


def _line(item_id: str, session: str, text: str, value: float, kind: str = "episode") -> Candidate:
    # An episode found by search with a word of the query (text part > 0), or a session's summary.
    return Candidate(
        id=item_id,
        type=kind,
        layer="episodic",
        section="Relevant history",
        text=text,
        value=value,
        score=value,
        score_parts={"fused": value, "text": 0.05} if kind == "episode" else {"session_relevance": value},
        sources=[
            Source(
                episode_id=int(item_id.split(":")[1]) if kind == "episode" else 99,
                external_id=None,
                occurred_at=T0,
                session=session,
            )
        ],  # fmt: skip
    )


def test_a_summary_never_causes_its_sessions_turns_to_be_skipped() -> None:
    def offered() -> list[Candidate]:
        return [
            _line("summary:s1", "s1", "summary: a trip to the lakes, a deposit for the kayaks", 1.0, "session_summary"),
            _line("episode:1", "s1", "user: We plan a kayak trip", 0.2),
            _line("episode:2", "s1", "user: The rental needs a deposit", 0.2),
            _line("episode:3", "s2", "user: The VPN drops at six", 0.1),
        ]

    # Worth more than its turns, the summary still does not take their place: it cites one of them.
    settled = settle_episodes(offered(), HeuristicWeights())
    chosen, _, _ = pack_layer(layer="episodic", candidates=settled, grant=500, fmt="markdown")
    assert sorted(c.id for c in chosen) == ["episode:1", "episode:2", "episode:3"]

    # Where its turns are not served (too long for the room left), the summary fills in.
    squeezed = offered()
    squeezed[1].text = squeezed[2].text = "user: " + "a very long line about kayaks " * 40
    chosen, _, _ = pack_layer(
        layer="episodic", candidates=settle_episodes(squeezed, HeuristicWeights()), grant=60, fmt="markdown"
    )
    assert sorted(c.id for c in chosen) == ["episode:3", "summary:s1"]


def test_what_the_facts_layer_leaves_unused_goes_to_the_episodes(tenant_a, ask) -> None:
    remember(tenant_a, [f"The VPN dropped again on evening {n} around six" for n in range(30)])
    for n in range(30):
        believe(
            tenant_a,
            attribute=f"hobby_{n}",
            value=f"origami model {n}",
            statement=f"Alice folds origami model number {n} at weekends.",
            observed_at=T0 + timedelta(days=n),
        )
    budgets = {"procedural": 0, "working": 0, "semantic": 600, "episodic": 100, "reserve": 1000}
    body = ask(query="when does the VPN drop?", max_tokens=3000, budgets=budgets)
    # No origami fact clears the floor for a question about the VPN: the semantic layer's 600 tokens
    # go to the history, which uses more than its own 100.
    assert body["layers"]["semantic"] == []
    assert body["budgets"]["granted"]["episodic"] > 600
    assert body["tokens"]["episodic"] > 100
    assert body["tokens"]["total"] == count_tokens(body["prompt"]) <= body["budgets"]["memory"]


def test_facts_compete_with_history_and_do_not_fill_the_context_first(tenant_a, ask) -> None:
    remember(tenant_a, [f"The VPN dropped again on evening {n} around six, right after the backup" for n in range(12)])
    for n in range(30):
        believe(
            tenant_a,
            attribute=f"hobby_{n}",
            value=f"origami model {n}",
            statement=f"Alice folds origami model number {n} when the rain drops.",
            observed_at=T0 + timedelta(days=n),
        )
    body = ask(query="when does the VPN drop?", max_tokens=400, budgets={"reserve": 0, "episodic": 400})
    # The facts share a word with the query but are about something else: history answers, and the
    # semantic layer's budget (1,200 tokens here) is a cap, not a quota filled before it.
    assert body["tokens"]["episodic"] > 200
    assert body["tokens"]["semantic"] < body["tokens"]["episodic"]
    assert body["tokens"]["total"] == count_tokens(body["prompt"]) <= 400

"""Each part of the packing that ENGRAM_PACKER_OFF names (router.parts) is gone when it is switched off,
and is there by default: every test asks the same store twice, with the part on and off."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from router.budgets import budget_plan
from router.candidates.semantic import settle_facts
from router.packing import assemble
from router.parts import PART_NAMES, PackerParts, packer_parts
from router.policy import HeuristicPolicy
from router.types import LAYERS, Candidate, ContextRequest, LayerCandidates
from tenants.models import TenantSettings
from tenants.scope import tenant_scope
from tests.router.conftest import T0, believe, remember
from tests.router.test_fact_and_its_line import HISTORY, QUERY
from tests.router.test_floors import _ended_and_summarised
from tests.router.test_packing import _episode, _flat
from tests.router.test_updates_context import QUESTION, _history


@pytest.fixture
def switch(settings: Any) -> Any:
    def _off(*names: str) -> None:
        settings.ENGRAM = {**settings.ENGRAM, "PACKER_OFF": list(names)}

    return _off


def _offered(tenant: Any, **body: Any) -> list[Candidate]:
    """The episodic candidates the heuristic policy offers for a request, before packing."""
    request = ContextRequest(subject="alice", **body)
    plan = budget_plan(config=tenant.config, max_tokens=request.max_tokens, overrides={}, layers=LAYERS)
    with tenant_scope(tenant):
        return HeuristicPolicy().offer(tenant=tenant, request=request, plan=plan).episodic


def test_every_part_runs_by_default_and_each_name_switches_off_its_own(switch) -> None:
    assert packer_parts().off() == ()
    for name in PART_NAMES:
        switch(name)
        assert packer_parts().off() == (name,)


def test_an_unknown_part_is_a_configuration_error(switch) -> None:
    switch("neighbors")
    with pytest.raises(ImproperlyConfigured, match="neighbors"):
        packer_parts()


@pytest.fixture
def told(tenant_a) -> int:
    episodes = remember(tenant_a, HISTORY)
    believe(
        tenant_a, attribute="pet", value="Biscuit", statement="The name of my dog is Biscuit.", sources=[episodes[2]]
    )
    return episodes[2].id


def _fact_and_line_served(body: dict[str, Any], episode_id: int) -> tuple[bool, bool]:
    fact = any(s["episode_id"] == episode_id for item in body["layers"]["semantic"] for s in item["sources"])
    line = any(
        item["sources"][0]["episode_id"] == episode_id
        for item in body["layers"]["episodic"]
        if item["type"] == "episode"
    )
    return fact, line


@pytest.mark.django_db
def test_without_the_fact_cover_a_fact_is_served_beside_its_line(told: int, ask, switch) -> None:
    body = {"query": QUERY, "max_tokens": 1000}
    assert _fact_and_line_served(ask(**body), told) != (True, True)
    switch("fact_cover")
    assert _fact_and_line_served(ask(**body), told) == (True, True)


@pytest.mark.django_db
def test_without_the_swap_the_fact_taken_first_keeps_its_place(told: int, ask, switch) -> None:
    body = {"query": QUERY, "max_tokens": 2000}
    assert _fact_and_line_served(ask(**body), told) == (False, True)
    switch("swap")
    assert _fact_and_line_served(ask(**body), told) == (True, False)


def test_settle_facts_without_cover_leaves_the_fact_and_its_line_uncovered() -> None:
    fact = _flat("semantic", 1, "Alice has a dog called Biscuit.", 0.3)
    fact.covers = frozenset({"episode:7"})
    line = _episode(7, "I adopted a dog called Biscuit", 0.6, "Relevant history", 0, "s-1")
    settle_facts([fact], [line], cover=False)
    assert fact.covers == frozenset() and line.covers == frozenset()


def _many_turns(tenant) -> None:
    # More passages than the search returns at a small budget (30), so that the turns beside the best hits
    # are not all hits themselves.
    remember(
        tenant,
        [f"On day {i} we talked about the {w} for a while." for i, w in enumerate(["garden", "boat", "taxes"] * 20)],
        session="s-many",
    )


@pytest.mark.django_db
def test_without_neighbours_no_turn_is_offered_beside_a_hit(tenant_a, switch) -> None:
    _many_turns(tenant_a)
    request = {"query": "what about the boat?", "max_tokens": 200}
    assert any("neighbour_of" in c.score_parts for c in _offered(tenant_a, **request))
    switch("neighbours")
    assert not any("neighbour_of" in c.score_parts for c in _offered(tenant_a, **request))


@pytest.mark.django_db
@pytest.mark.usefixtures("offline_extractor")
def test_without_summaries_no_session_summary_is_offered(tenant_a, switch) -> None:
    remember(
        tenant_a,
        ["We are planning a kayak trip to the Dolomites lakes in July.", "The kayak rental shop needs a deposit."],
        session="trip-1",
    )
    _ended_and_summarised(tenant_a, "trip-1")
    request = {"query": "kayak trip deposit", "session": "later", "max_tokens": 2000}
    assert "summary:trip-1" in {c.id for c in _offered(tenant_a, **request)}
    switch("summaries")
    assert not any(c.type == "session_summary" for c in _offered(tenant_a, **request))


@pytest.mark.django_db
def test_without_the_earlier_label_the_older_statement_is_served_unlabelled(tenant_a, ask, switch) -> None:
    _history(tenant_a)
    assert "(earlier) " in ask(query=QUESTION, max_tokens=2000)["prompt"]
    switch("earlier")
    body = ask(query=QUESTION, max_tokens=2000)
    assert "0101" in body["prompt"] and "(earlier)" not in body["prompt"]


@pytest.mark.django_db
def test_without_latest_the_subjects_latest_events_are_not_offered(tenant_a, switch) -> None:
    remember(tenant_a, ["I just bought a red bicycle."], session="s-1")
    remember(tenant_a, ["The red bicycle has a flat tyre."], session="s-2", start=T0 + timedelta(days=1))
    assert any("latest_rank" in c.score_parts for c in _offered(tenant_a, max_tokens=1000))
    switch("latest")
    assert _offered(tenant_a, max_tokens=1000) == []


@pytest.mark.django_db
def test_without_day_headers_history_is_listed_without_its_dates(tenant_a, ask, switch) -> None:
    _history(tenant_a)
    body = ask(query=QUESTION, max_tokens=2000)
    assert "### 10 Mar 2024" in body["prompt"]
    switch("day_headers")
    bare = ask(query=QUESTION, max_tokens=2000)
    assert "###" not in bare["prompt"] and "0199" in bare["prompt"]
    assert bare["tokens"]["total"] < body["tokens"]["total"]


def _facts_over_their_cap() -> tuple[LayerCandidates, Any]:
    facts = [_flat("semantic", i, f"Alice keeps fact number {i} about her garden.", 0.9) for i in range(20)]
    history = [_episode(100 + i, f"a line about the weather {i}", 0.01, "Relevant history", 0, "s-1") for i in range(5)]
    plan = budget_plan(
        config=TenantSettings(),
        max_tokens=1000,
        overrides={"reserve": 0, "semantic": 60, "episodic": 900, "procedural": 20, "working": 20},
        layers=LAYERS,
    )
    return LayerCandidates(semantic=facts, episodic=history), plan


def test_without_layer_caps_facts_take_more_than_their_layers_budget() -> None:
    offered, plan = _facts_over_their_cap()
    capped = assemble(offered=offered, plan=plan, fmt="markdown")
    assert capped.tokens["semantic"] <= plan.semantic
    uncapped = assemble(offered=offered, plan=plan, fmt="markdown", parts=PackerParts.without(["layer_caps"]))
    assert uncapped.tokens["semantic"] > plan.semantic
    assert uncapped.tokens["total"] <= plan.memory

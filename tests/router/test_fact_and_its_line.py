"""A fact and the line of history it was extracted from say the same thing: POST /v1/context serves one
of them, never both (router.candidates.semantic.settle_facts, router.packing). Where room is short the
one worth more per token is served; where it is left, the one worth more."""

from __future__ import annotations

import pytest

from router.budgets import budget_plan
from router.candidates.semantic import settle_facts
from router.packing import assemble
from router.types import LAYERS, Candidate, LayerCandidates
from tenants.models import TenantSettings
from tests.router.conftest import believe, remember
from tests.router.test_packing import _episode, _flat

HISTORY_SECTION = "Relevant history"

HISTORY = [
    "My printer keeps jamming on the second tray",
    ("assistant", "Try removing the second tray and cleaning the rollers"),
    "We moved the office to Lisbon last spring",
    "I adopted a dog called Biscuit from the shelter on the hill, a beagle who loves long walks by the river",
    ("assistant", "Congratulations on Biscuit!"),
    "The VPN drops every evening around six",
]


def _served(body: dict) -> tuple[list[int], list[int]]:
    """The source episodes of the facts served, and the episodes served as lines of history."""
    facts = [s["episode_id"] for item in body["layers"]["semantic"] for s in item["sources"]]
    lines = [item["sources"][0]["episode_id"] for item in body["layers"]["episodic"] if item["type"] == "episode"]
    return facts, lines


@pytest.mark.django_db
def test_a_fact_and_its_source_line_are_never_served_together(tenant_a, ask) -> None:
    episodes = remember(tenant_a, HISTORY)
    told = episodes[3].id
    believe(
        tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog called Biscuit.", sources=[episodes[3]]
    )
    for budget in (100, 110, 120, 135, 150, 200, 300, 500, 1000, 2000):
        body = ask(query="what is the name of my dog?", max_tokens=budget, budgets={"reserve": 0, "episodic": budget})
        facts, lines = _served(body)
        assert not (told in facts and told in lines), (budget, body["prompt"])
        assert told in facts or told in lines, (budget, body["prompt"])


@pytest.mark.django_db
def test_with_room_left_the_line_worth_more_than_its_fact_is_served(tenant_a, ask) -> None:
    episodes = remember(tenant_a, HISTORY)
    told = episodes[3].id
    believe(
        tenant_a, attribute="pet", value="Biscuit", statement="Alice has a dog called Biscuit.", sources=[episodes[3]]
    )
    body = ask(query="what is the name of my dog?", max_tokens=2000)
    facts, lines = _served(body)
    assert told in lines and told not in facts, body["prompt"]
    trace = {item["id"]: item for item in body["layers"]["episodic"]}
    assert any("Biscuit" in item["text"] for item in trace.values())


def _fact_and_line(line_words: int = 75) -> tuple[Candidate, Candidate, list[Candidate]]:
    """A fact worth less than the line it came from, but more per token (it is shorter), and other
    lines of history worth less per token than both."""
    fact = _flat("semantic", 1, "Alice has a dog called Biscuit.", 0.3)
    fact.covers = frozenset({"episode:7"})
    line = _episode(
        7,
        "I adopted a dog called Biscuit " + "and he loves long walks " * (line_words // 5),
        0.6,
        HISTORY_SECTION,
        0,
        "s-1",
    )
    others = [
        _episode(10 + i, f"the printer jammed again on tray {i} " * 4, 0.02, HISTORY_SECTION, 1, "s-2")
        for i in range(30)
    ]
    return fact, line, others


def _served_ids(budget: int) -> set[str]:
    fact, line, others = _fact_and_line()
    episodic = [line, *others]
    settle_facts([fact], episodic)
    plan = budget_plan(
        config=TenantSettings(), max_tokens=budget, overrides={"reserve": 0, "episodic": budget}, layers=LAYERS
    )
    built = assemble(offered=LayerCandidates(semantic=[fact], episodic=episodic), plan=plan, fmt="markdown")
    return {c.id for items in built.chosen.values() for c in items}


@pytest.mark.parametrize("budget", [100, 150, 200, 400, 1000, 4000])
def test_the_fact_and_its_line_cover_each_other_whichever_is_taken_first(budget: int) -> None:
    chosen = _served_ids(budget)
    assert not {"semantic:1", "episode:7"} <= chosen, chosen


def test_where_room_is_short_the_fact_stands_in_for_its_line() -> None:
    chosen = _served_ids(100)
    assert "semantic:1" in chosen and "episode:7" not in chosen


def test_where_room_is_left_the_line_worth_more_replaces_its_fact() -> None:
    chosen = _served_ids(4000)
    assert "episode:7" in chosen and "semantic:1" not in chosen

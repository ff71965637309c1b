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

# The fact matches the query more closely than its line does, and is shorter: it is worth more per
# token, the line (the best hit, long) is worth more. Before the two covered each other, the fact was
# taken first and the line as well, at every budget with room for both (150 tokens and up).
HISTORY = [
    "Printer jams again",
    "The VPN drops at six",
    "So, the name of my dog is Biscuit: I adopted him from the shelter on the hill last spring, a beagle who"
    " loves long walks by the river, chewing my shoes, barking at the postman every single morning and"
    " sleeping on the sofa all afternoon while I work from home on the quarterly reports",
]
QUERY = "what is the name of my dog?"


@pytest.fixture
def told(tenant_a) -> int:
    """The episode that told the dog's name, with the fact extracted from it."""
    episodes = remember(tenant_a, HISTORY)
    believe(
        tenant_a, attribute="pet", value="Biscuit", statement="The name of my dog is Biscuit.", sources=[episodes[2]]
    )
    return episodes[2].id


def _served(body: dict) -> tuple[list[int], list[int]]:
    """The source episodes of the facts served, and the episodes served as lines of history."""
    facts = [s["episode_id"] for item in body["layers"]["semantic"] for s in item["sources"]]
    lines = [item["sources"][0]["episode_id"] for item in body["layers"]["episodic"] if item["type"] == "episode"]
    return facts, lines


@pytest.mark.django_db
@pytest.mark.parametrize("budget", [100, 150, 200, 400, 1000])
def test_a_fact_and_its_source_line_are_never_served_together(told: int, ask, budget: int) -> None:
    body = ask(query=QUERY, max_tokens=budget, budgets={"reserve": 0, "episodic": budget})
    facts, lines = _served(body)
    assert not (told in facts and told in lines), body["prompt"]
    assert told in facts or told in lines, body["prompt"]


@pytest.mark.django_db
def test_with_room_left_the_line_worth_more_than_its_fact_is_served(told: int, ask) -> None:
    facts, lines = _served(ask(query=QUERY, max_tokens=2000))
    assert told in lines and told not in facts


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

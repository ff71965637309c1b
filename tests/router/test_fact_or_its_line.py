"""A fact or the line it came from (router.candidates.semantic.fact_defer, fact_earlier). A fact says
less than its line: where the line answers the question better (it holds the question's words that the
fact does not, and is worth more), the line is served while it fits, and the fact only where it does not. A fact restating an older statement that a newer line speaks of is the
older statement too: it is never served without the newer line (DESIGN invariant 8)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from router.budgets import budget_plan
from router.candidates.semantic import settle_facts
from router.packing import assemble
from router.types import LAYERS, Candidate, LayerCandidates
from tenants.models import TenantSettings
from tests.router.conftest import T0, believe, remember
from tests.router.test_packing import _episode, _flat

OLD = "My phone number is 555 0101, call me there any evening after work or at the weekend."
NEW = "My phone number is now 555 0199, call me there."
PHONE = "What is my phone number?"


@pytest.fixture
def moved(tenant_a) -> None:
    """An older and a newer line on one thing, and a fact extracted from the older one only."""
    old = remember(tenant_a, [OLD, ("assistant", "Noted."), "I like green tea."], session="s-1")
    remember(tenant_a, ["The weather is nice today.", "We adopted a cat."], session="s-2", start=T0 + timedelta(days=3))
    remember(tenant_a, [NEW, ("assistant", "Updated.")], session="s-3", start=T0 + timedelta(days=9))
    believe(
        tenant_a, attribute="phone_number", value="555 0101", statement="Alice's phone is 555 0101.", sources=[old[0]]
    )


@pytest.mark.django_db
@pytest.mark.parametrize("budget", [100, 110, 120, 130, 140, 150, 175, 200, 400])
def test_a_fact_restating_an_older_statement_never_comes_without_the_newer(moved: None, ask, budget: int) -> None:
    body = ask(query=PHONE, max_tokens=budget, budgets={"reserve": 0, "episodic": budget})
    assert body["tokens"]["total"] <= budget
    if "0101" in body["prompt"]:
        assert "0199" in body["prompt"], body["prompt"]


# The same decisions on a pool built by hand, packed as POST /v1/context packs (router.packing.assemble).
SECTION = "Relevant history"
LINE = (
    "I went to a pottery workshop on Saturday and we discussed glazing techniques, kiln temperatures for "
    "stoneware and how to keep a bowl from cracking while it dries."
)


def _pool(fact_text: str, *, earlier: bool = False) -> tuple[Candidate, list[Candidate]]:
    """A fact from episode 7 worth 0.9 by its own relevance, its line worth 1.0 (labelled "(earlier)",
    requiring episode 8's line, when `earlier`), and lines of other turns that fill what is left."""
    fact = _flat("semantic", 1, f"{fact_text} (2 Mar 2024, confidence 0.65)", 0.9)
    fact.score_parts = {"vector": 0.5, "text": 1.0, "confidence": 0.65}
    line = _episode(7, LINE, 1.0, SECTION, 0, "s-1")
    fact.sources = list(line.sources)
    fact.covers = frozenset({line.id})
    newer = _episode(8, "The pottery workshop moved to Sundays now.", 0.9, SECTION, 5, "s-2")
    if earlier:
        line.text = f"(earlier) {line.text}"
        line.requires = frozenset({newer.id})
    others = [
        _episode(10 + i, f"pottery note {i} on the wheel and the clay", 0.2, SECTION, 1, "s-3") for i in range(12)
    ]
    return fact, [line, newer, *others]


def _packed(fact: Candidate, episodic: list[Candidate], budget: int, query: str, **parts: bool) -> set[str]:
    settle_facts([fact], episodic, query=query, **parts)
    plan = budget_plan(
        config=TenantSettings(), max_tokens=budget, overrides={"reserve": 0, "episodic": budget}, layers=LAYERS
    )
    built = assemble(offered=LayerCandidates(semantic=[fact], episodic=episodic), plan=plan, fmt="markdown")
    return {c.id for items in built.chosen.values() for c in items}


ASKED = "What kiln temperatures came up at the pottery workshop?"


@pytest.mark.parametrize("budget", [150, 200, 250])
def test_a_fact_lacking_the_questions_words_its_line_holds_defers_to_the_line(budget: int) -> None:
    fact, episodic = _pool("Alice went to a pottery workshop.")
    chosen = _packed(fact, episodic, budget, ASKED)
    assert "episode:7" in chosen and "semantic:1" not in chosen, chosen
    fact, episodic = _pool("Alice went to a pottery workshop.")
    chosen = _packed(fact, episodic, budget, ASKED, defer=False)
    assert "semantic:1" in chosen and "episode:7" not in chosen, chosen


def test_a_fact_holding_every_word_of_the_question_its_line_holds_still_stands_in() -> None:
    fact, episodic = _pool("Alice learned kiln temperatures at a pottery workshop.")
    chosen = _packed(fact, episodic, 150, ASKED)
    assert "semantic:1" in chosen and "episode:7" not in chosen, chosen


@pytest.mark.parametrize("budget", [100, 120, 150, 200, 250])
def test_a_fact_restating_only_an_earlier_line_is_served_only_with_the_newer(budget: int) -> None:
    fact, episodic = _pool("Alice went to a pottery workshop on Saturdays.", earlier=True)
    chosen = _packed(fact, episodic, budget, "When is the pottery workshop?", defer=False)
    if "semantic:1" in chosen:
        assert "episode:8" in chosen, chosen
    fact, episodic = _pool("Alice went to a pottery workshop on Saturdays.", earlier=True)
    assert fact.requires == frozenset()
    settle_facts([fact], episodic, query="When is the pottery workshop?")
    assert fact.requires == frozenset({"episode:8"})

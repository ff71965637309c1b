"""Knowledge updates in the context: when two lines that answer the query speak of the same thing, the
newer comes first and the older is labelled "(earlier)"; the older never comes without the newer."""

from __future__ import annotations

from datetime import timedelta

import pytest

from core.tokens import count_tokens
from router.budgets import budget_plan
from router.packing import _drop, assemble, pack_layer
from router.types import LAYERS, Candidate, LayerCandidates
from tenants.models import TenantSettings
from tests.router.conftest import T0, remember

pytestmark = pytest.mark.django_db

OLD = "My phone number is 555 0101, call me there."
NEW = "My phone number is now 555 0199, call me there."
QUESTION = "What is my phone number?"


def _history(tenant) -> None:
    remember(tenant, [OLD, ("assistant", "Noted."), "I like green tea."], session="s-1")
    remember(tenant, ["The weather is nice today.", "We adopted a cat."], session="s-2", start=T0 + timedelta(days=3))
    remember(tenant, [NEW, ("assistant", "Updated.")], session="s-3", start=T0 + timedelta(days=9))


def _line(body: dict, needle: str) -> dict | None:
    return next((i for i in body["layers"]["episodic"] if needle in i["text"]), None)


def test_the_newer_statement_comes_first_and_the_older_is_labelled_earlier(tenant_a, ask) -> None:
    _history(tenant_a)
    body = ask(query=QUESTION, max_tokens=2000)
    new, old = _line(body, "0199"), _line(body, "0101")
    assert new is not None and old is not None, body["prompt"]
    prompt = body["prompt"]
    assert prompt.index("0199") < prompt.index("0101")
    assert old["text"].startswith("(earlier) ") and not new["text"].startswith("(earlier)")
    assert old["score_parts"]["earlier_than"] == new["sources"][0]["episode_id"]
    assert old["tokens"] == count_tokens(f"- {old['text']}")
    # History reads newest day first: the day of the update is above the day of the old number.
    assert prompt.index("10 Mar 2024") < prompt.index("1 Mar 2024")


@pytest.mark.parametrize("budget", [100, 110, 125, 150, 200, 400])
def test_the_older_statement_never_comes_without_its_update(tenant_a, ask, budget: int) -> None:
    _history(tenant_a)
    body = ask(query=QUESTION, max_tokens=budget, budgets={"reserve": 0})
    assert body["tokens"]["total"] <= budget
    if "0101" in body["prompt"]:
        assert "0199" in body["prompt"]


def test_unrelated_answers_are_not_labelled(tenant_a, ask) -> None:
    remember(tenant_a, ["I adopted a dog called Biscuit."], session="s-1")
    remember(tenant_a, ["My phone number is 555 0199."], session="s-2", start=T0 + timedelta(days=5))
    body = ask(query="What is the name of my dog and my phone number?", max_tokens=2000)
    assert "(earlier)" not in body["prompt"]


def _item(item_id: str, value: float, *, requires: frozenset[str] = frozenset()) -> Candidate:
    return Candidate(
        id=item_id,
        type="episode",
        layer="episodic",
        section="Relevant history",
        text=f"user: statement {item_id} with a few words",
        value=value,
        score=value,
        score_parts={},
        requires=requires,
    )


def test_packing_takes_a_required_item_first_or_leaves_its_dependent_out() -> None:
    newer, older = _item("new", 0.5), _item("old", 0.9, requires=frozenset({"new"}))
    one_line = count_tokens("## Relevant history\n- user: statement new with a few words") + 4
    chosen, _, _ = pack_layer(layer="episodic", candidates=[older, newer], grant=one_line, fmt="markdown")
    assert [c.id for c in chosen] == ["new"]
    chosen, _, _ = pack_layer(layer="episodic", candidates=[older, newer], grant=400, fmt="markdown")
    assert {c.id for c in chosen} == {"new", "old"}
    chosen, _, _ = pack_layer(layer="episodic", candidates=[older], grant=400, fmt="markdown")
    assert chosen == []


def test_a_fact_that_stands_in_for_the_newer_line_lets_the_older_one_in() -> None:
    """The newer line an older one requires may be served as the fact it told (the fact covers it): the
    update is in the context, so the older line may follow. Found on LoCoMo through the real write path:
    with facts on, "(earlier)" evidence lines waited for a turn that a fact had covered, and were lost."""
    newer, older = _item("episode:2", 0.5), _item("episode:1", 0.9, requires=frozenset({"episode:2"}))
    fact = Candidate(
        id="fact:1", type="fact", layer="semantic", section="Known facts", text="User's statement is 2.",
        value=2.0, score=2.0, score_parts={}, covers=frozenset({"episode:2"}),
    )  # fmt: skip
    plan = budget_plan(config=TenantSettings(), max_tokens=4000, overrides={}, layers=LAYERS)
    built = assemble(offered=LayerCandidates(semantic=[fact], episodic=[older, newer]), plan=plan, fmt="markdown")
    assert [c.id for c in built.chosen["semantic"]] == ["fact:1"]
    assert [c.id for c in built.chosen["episodic"]] == ["episode:1"]
    # Without the fact, the older line still never comes without the newer one.
    built = assemble(offered=LayerCandidates(episodic=[older]), plan=plan, fmt="markdown")
    assert built.chosen["episodic"] == []


def test_dropping_the_fact_that_stood_in_drops_the_older_line_it_let_in() -> None:
    newer, older = _item("episode:2", 0.5), _item("episode:1", 0.9, requires=frozenset({"episode:2"}))
    fact = Candidate(
        id="fact:1", type="fact", layer="semantic", section="Known facts", text="User's statement is 2.",
        value=2.0, score=2.0, score_parts={}, covers=frozenset({"episode:2"}),
    )  # fmt: skip
    chosen = [fact, older]
    _drop(chosen, fact)
    assert chosen == []
    chosen = [fact, older, newer]
    _drop(chosen, fact)
    assert [c.id for c in chosen] == ["episode:1", "episode:2"]

"""What bounds recall (evaluation.pool_bound): the cheapest cover is exact, the ceiling is priced as the
router prices a prompt, grounding is the evaluation's rule, and served never exceeds the ceiling."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from core.tokens import count_tokens
from evaluation.pool_bound import (
    Bound,
    PoolItem,
    bound,
    cheapest_cover,
    context_tokens,
    line_cost,
    tally,
)
from evaluation.recall import Evidence, Question, evidence_turn_terms
from router.features import feature_names
from router.models import ContextTrace, ValueModel
from router.pricing import line_tokens
from router.rendering import render_layer, render_prompt
from router.types import Candidate
from tenants.models import Tenant
from tenants.scope import tenant_scope

TURNS = {
    "D1:1": "I finally moved to Lisbon last week, the flat is tiny but bright.",
    "D1:2": "We adopted a puppy yesterday! His name is Rex and he chews everything.",
    "D1:3": "The weather has been lovely, we walk along the river every evening.",
}
BOTH = Question(
    "conv-x",
    0,
    "Where did Ann move and what is her puppy called?",
    "multi-hop",
    (Evidence("D1:1", None, "D1:1"), Evidence("D1:2", None, "D1:2")),
    answer="Lisbon, Rex",
)


def _terms(e: Evidence) -> frozenset[str]:
    return evidence_turn_terms(e, TURNS)


def _turn(external_id: str, *, day: str = "8 May 2023", served: bool = False) -> PoolItem:
    text = f"Ann: {TURNS[external_id]}"
    return PoolItem(
        id=f"episode:{external_id}",
        type="episode",
        layer="episodic",
        section="Relevant history",
        text=text,
        tokens=count_tokens(f"- {text}"),
        sources=((external_id, (0, len(TURNS[external_id]))),),
        group=day,
        group_header=day,
        served=served,
    )


def _fact(item_id: str, text: str, *cited: str, served: bool = False) -> PoolItem:
    return PoolItem(
        id=item_id,
        type="fact",
        layer="semantic",
        section="Known facts",
        text=text,
        tokens=count_tokens(f"- {text}"),
        sources=tuple((c, None) for c in cited),
        served=served,
    )


def _bound(items: list[PoolItem], limit: int, question: Question = BOTH) -> Bound:
    return bound(question, items, limit=limit, contents=TURNS, turn_terms=_terms, answer_served=False)


def test_the_cheapest_cover_is_exact_where_the_greedy_choice_is_not() -> None:
    # The widest option first (greedy by coverage) costs 10 + 3; the two narrow ones cost 8 in all.
    options = [(0b011, 10), (0b001, 4), (0b010, 4), (0b100, 3)]
    assert cheapest_cover(options, 0b111) == (1, 2, 3)
    assert cheapest_cover(options, 0b011) == (1, 2)
    assert cheapest_cover([(0b001, 1)], 0b011) is None


def test_prompt_tokens_are_priced_as_the_router_renders_them() -> None:
    items = [_turn("D1:1"), _turn("D1:3", day="9 May 2023"), _fact("fact:a", "Ann lives in Lisbon.", "D1:1")]
    candidates = {
        layer: [
            Candidate(
                id=i.id,
                type=i.type,
                layer=i.layer,
                section=i.section,
                text=i.text,
                value=0.0,
                score=0.0,
                score_parts={},
                group=i.group,
                group_header=i.group_header,
                order=(i.group, n),
            )  # fmt: skip
            for n, i in enumerate(items)
            if i.layer == layer
        ]
        for layer in ("semantic", "episodic")
    }
    prompt = render_prompt(render_layer(layer, candidates[layer], "markdown") for layer in ("semantic", "episodic"))  # type: ignore[arg-type]
    assert "### 9 May 2023" in prompt and "## Known facts" in prompt
    assert context_tokens(items) == count_tokens(prompt)
    assert all(line_tokens(c) == i.tokens for c in candidates["episodic"] for i in items if i.id == c.id)


def test_the_pool_covers_what_the_budget_cannot_hold() -> None:
    items = [_turn("D1:1", served=True), _turn("D1:2"), _turn("D1:3", served=True)]
    both = context_tokens(items[:2])
    short = _bound(items, both - 1)
    assert (short.served, short.covered, short.ceiling) == (False, True, False)
    assert short.cover_tokens == both
    enough = _bound(items, both)
    assert (enough.served, enough.covered, enough.ceiling, enough.ceiling_passages) == (False, True, True, True)


def test_a_fact_that_restates_both_turns_reaches_what_passages_cannot() -> None:
    fact = _fact(
        "fact:a",
        "Ann moved to Lisbon last week and adopted a puppy named Rex. (8 May 2023, confidence 0.9)",
        "D1:1",
        "D1:2",
    )
    items = [_turn("D1:1"), _turn("D1:2"), fact]
    limit = context_tokens([fact])
    assert limit < context_tokens(items[:2])
    b = _bound(items, limit)
    assert (b.covered, b.ceiling, b.covered_passages, b.ceiling_passages) == (True, True, True, False)
    assert b.answer_ceiling is True and b.answer_ceiling_passages is False


def test_a_fact_that_only_cites_a_turn_does_not_ground_it() -> None:
    cites = _fact("fact:b", "Ann likes the weather. (8 May 2023, confidence 0.9)", "D1:1", "D1:2")
    b = _bound([cites, _turn("D1:3")], 10_000)
    assert (b.covered, b.ceiling, b.cover_tokens) == (False, False, None)


def test_what_was_served_is_never_above_the_ceiling() -> None:
    items = [_turn("D1:1", served=True), _turn("D1:2", served=True)]
    # A limit below what was served (a pricing slip): the oracle still counts what was served.
    b = _bound(items, 5)
    assert (b.served, b.ceiling) == (True, True)
    assert b.undecided is False


def test_answer_containment_needs_every_term_of_the_answer_within_the_budget() -> None:
    items = [_turn("D1:1"), _turn("D1:2")]
    lisbon = context_tokens(items[:1])
    b = _bound(items, lisbon)
    assert (b.answer_pool, b.answer_ceiling) == (True, False)
    assert _bound(items, context_tokens(items)).answer_ceiling is True


def test_the_evidence_lies_as_deep_as_the_lines_the_packer_takes_before_it() -> None:
    first, second, other = (
        dataclasses.replace(_turn("D1:2"), value=0.1),
        dataclasses.replace(_turn("D1:1"), value=0.5),
        dataclasses.replace(_turn("D1:3"), value=0.9),
    )
    b = _bound([first, second, other], 10_000)
    assert b.depth == line_cost(other) + line_cost(second) + line_cost(first)
    # A filler is tried last, whatever it is worth.
    b = _bound([dataclasses.replace(other, filler=True), first, second], 10_000)
    assert b.depth == line_cost(second) + line_cost(first)
    assert _bound([other], 10_000).depth is None


def test_the_tally_counts_each_half_and_all_and_the_question_category() -> None:
    one = _bound([_turn("D1:1", served=True), _turn("D1:2", served=True)], 10_000)
    none = _bound([_turn("D1:3", served=True)], 10_000)
    rows = [(BOTH, 1000, "first", one, True), (BOTH, 1000, "second", none, False)]
    summaries = {k: t.summary() for k, t in tally(rows).items()}
    assert summaries[(1000, "first", "overall")]["served"] == 1.0
    assert summaries[(1000, "second", "overall")]["covered"] == 0.0
    everything = summaries[(1000, "all", "multi-hop")]
    assert (everything["n"], everything["served"], everything["memory_eval"]) == (2, 0.5, 0.5)
    assert everything["cover_tokens_median"] == one.cover_tokens
    assert line_cost(_turn("D1:1")) == _turn("D1:1").tokens + 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_pool_bound_serves_memory_evals_figure_and_rebuilds_the_served_items(tmp_path: Path) -> None:
    call_command(
        "memory_eval", "updates", "--conversations", "2", "--budgets", "1000", "--methods", "engram",
        "--tenant", "pool-bound", stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    out = tmp_path / "pool.json"
    call_command(
        "pool_bound", "--set", "updates", "--conversations", "2", "--budgets", "300,1000", "--tenant", "pool-bound",
        "--json", str(out), stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert result["served_mismatches"] == [] and result["unresolved"] == {}
    assert result["write_path"]["episodes_posted"] == 0
    for kind, (served, same_text, same_sources) in result["rebuilt"].items():
        assert served and same_sources == served, kind
        if kind == "fact":
            assert same_text == served
    rows = [r for r in result["summaries"] if r["group"] == "overall"]
    assert {(r["budget"], r["half"]) for r in rows} == {(b, h) for b in (300, 1000) for h in ("first", "second", "all")}
    for r in rows:
        assert r["memory_eval"] == r["served"] <= r["ceiling"] <= r["covered"]
        assert r["ceiling_passages"] <= r["ceiling"] and r["covered_logged"] <= r["covered"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_learned_value_reranks_the_same_pool_and_the_tenant_is_restored_after(tmp_path: Path) -> None:
    call_command(
        "memory_eval", "updates", "--conversations", "2", "--budgets", "300", "--methods", "engram",
        "--tenant", "pool-model", stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip
    tenant = Tenant.objects.get(slug="pool-model")
    names = feature_names([])
    weights = [0.0] * len(names)
    weights[names.index("log_formula_value")] = 1.0
    weights[names.index("type:fact")] = 4.0
    with tenant_scope(tenant):
        ValueModel.objects.create(
            tenant=tenant, version=1, features=names, coefficients=weights, intercept=-2.0,
            means=[0.0] * len(names), scales=[1.0] * len(names),
        )  # fmt: skip
    before = Tenant.objects.filter(id=tenant.id).values("settings", "serving_value_model", "trial_value_model")[0]
    runs = {}
    for label, extra in (("formula", ()), ("model", ("--value-model", "newest"))):
        out = tmp_path / f"{label}.json"
        call_command(
            "pool_bound", "--set", "updates", "--conversations", "2", "--budgets", "300", "--tenant", "pool-model",
            "--json", str(out), *extra, stdout=io.StringIO(), stderr=io.StringIO(),
        )  # fmt: skip
        runs[label] = {r["half"]: r for r in json.loads(out.read_text())["summaries"] if r["group"] == "overall"}
        assert Tenant.objects.filter(id=tenant.id).values(*before)[0] == before
    with tenant_scope(tenant):
        served_by = set(ContextTrace.objects.values_list("policy", flat=True))
    assert any(p.endswith("+value-v1") for p in served_by) and any("+value" not in p for p in served_by)
    for half, formula in runs["formula"].items():
        model = runs["model"][half]
        # The model orders the pool; it does not change it.
        assert (model["covered"], model["ceiling"], model["pool_mean"]) == (
            formula["covered"], formula["ceiling"], formula["pool_mean"],
        )  # fmt: skip

"""Packing and rendering without a database: exact token accounting, budgets, order, determinism."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import ValidationProblem
from core.tokens import count_tokens
from router.budgets import budget_plan
from router.packing import assemble, pack_layer
from router.pricing import said_tokens
from router.rendering import format_day, item_line, render_layer
from router.types import LAYERS, BudgetPlan, Candidate, LayerCandidates, Source
from tenants.models import TenantSettings

SECTION = {"procedural": "Procedures", "semantic": "Known facts", "working": "Working notes"}
BASE = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)

words = st.text(alphabet=st.sampled_from("abcdefghij klmnop\nqrstuvwxyz,.:!é€0123456789#"), min_size=0, max_size=120)


def _episode(i: int, text: str, value: float, section: str, day: int, session: str) -> Candidate:
    moment = BASE + timedelta(days=day, minutes=i)
    return Candidate(
        id=f"episode:{i}",
        type="episode",
        layer="episodic",
        section=section,
        text=f"user: {text}",
        value=value,
        score=value,
        score_parts={"x": value},
        sources=[Source(episode_id=i, external_id=f"e{i}", occurred_at=moment, session=session)],
        occurred_at=moment,
        group=f"{session}|{moment.date()}",
        group_header=f"{format_day(moment)}, session {session}",
        order=(moment.date(), session, moment, i),
    )


def _flat(layer: str, i: int, text: str, value: float) -> Candidate:
    return Candidate(
        id=f"{layer}:{i}",
        type=layer,
        layer=layer,  # type: ignore[arg-type]
        section=SECTION[layer],
        text=text,
        value=value,
        score=value,
        score_parts={},
        order=(i,),
    )


@st.composite
def stores(draw: st.DrawFn) -> LayerCandidates:
    out = LayerCandidates()
    n = 0
    for layer in ("procedural", "semantic", "working"):
        for _ in range(draw(st.integers(0, 6))):
            n += 1
            out.of(layer).append(_flat(layer, n, draw(words), draw(st.floats(0.001, 2.0))))  # type: ignore[arg-type]
    for _ in range(draw(st.integers(0, 40))):
        n += 1
        out.episodic.append(
            _episode(
                n,
                draw(words),
                draw(st.floats(0.001, 2.0)),
                draw(st.sampled_from(["Recent activity", "Relevant history"])),
                draw(st.integers(0, 5)),
                draw(st.sampled_from(["s-1", "s-2", "long session name"])),
            )
        )
    return out


@st.composite
def plans(draw: st.DrawFn) -> BudgetPlan:
    max_tokens = draw(st.integers(100, 3000))
    overrides = {k: draw(st.integers(0, 2000)) for k in LAYERS if draw(st.booleans())}
    if draw(st.booleans()):
        overrides["reserve"] = draw(st.integers(0, max_tokens - 50))
    return budget_plan(config=TenantSettings(), max_tokens=max_tokens, overrides=overrides, layers=LAYERS)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(store=stores(), plan=plans(), fmt=st.sampled_from(["markdown", "xml"]))
def test_prompt_tokens_are_exact_and_never_over_budget(store: LayerCandidates, plan: BudgetPlan, fmt: str) -> None:
    built = assemble(offered=store, plan=plan, fmt=fmt)
    assert built.tokens["total"] == count_tokens(built.prompt)
    assert built.tokens["total"] <= plan.memory <= plan.max_tokens
    for layer in LAYERS:
        assert built.tokens[layer] <= built.granted[layer]
        # Each layer's count is that of its rendered text, also after the whole prompt was trimmed.
        assert built.tokens[layer] == count_tokens(render_layer(layer, built.chosen[layer], fmt))
        for item in built.chosen[layer]:
            assert item.text in built.prompt
    # Same input, same output.
    again = assemble(offered=store, plan=plan, fmt=fmt)
    assert again.prompt == built.prompt and again.tokens == built.tokens


@settings(max_examples=100, deadline=None)
@given(store=stores())
def test_sections_appear_in_layer_order(store: LayerCandidates) -> None:
    plan = budget_plan(config=TenantSettings(), max_tokens=20_000, overrides={"reserve": 0}, layers=LAYERS)
    built = assemble(offered=store, plan=plan, fmt="markdown")
    headers = [line for line in built.prompt.splitlines() if line.startswith("## ")]
    expected = ["## Procedures", "## Known facts", "## Recent activity", "## Relevant history", "## Working notes"]
    assert headers == [h for h in expected if h in headers]


def test_packing_prefers_value_per_token_within_the_grant() -> None:
    dense = _flat("semantic", 1, "short and useful", 1.0)
    sparse = _flat("semantic", 2, "a long rambling statement " * 20, 1.0)
    chosen, text, tokens = pack_layer(layer="semantic", candidates=[sparse, dense], grant=30, fmt="markdown")
    assert [c.id for c in chosen] == ["semantic:1"]
    assert tokens == count_tokens(text) <= 30


def test_items_covered_by_a_chosen_item_are_skipped() -> None:
    fact = _flat("semantic", 1, "Alice prefers email", 1.0)
    fact.covers = frozenset({"episode:7"})
    episode = _episode(7, "I prefer email, please", 1.0, "Relevant history", 0, "s-1")
    other = _episode(8, "the printer is broken", 0.5, "Relevant history", 0, "s-1")
    plan = budget_plan(config=TenantSettings(), max_tokens=4000, overrides={}, layers=LAYERS)
    built = assemble(offered=LayerCandidates(semantic=[fact], episodic=[episode, other]), plan=plan, fmt="markdown")
    assert [c.id for c in built.chosen["episodic"]] == ["episode:8"]
    assert "I prefer email" not in built.prompt


def test_unused_procedural_and_semantic_budget_rolls_over_to_episodic() -> None:
    lines = [_episode(i, f"line number {i} " * 8, 1.0, "Relevant history", 0, "s") for i in range(200)]
    plan = budget_plan(
        config=TenantSettings(), max_tokens=4000, overrides={"reserve": 0, "episodic": 1000}, layers=LAYERS
    )
    built = assemble(offered=LayerCandidates(episodic=lines), plan=plan, fmt="markdown")
    assert built.granted["episodic"] > 1000 + plan.procedural + plan.semantic - 10
    assert built.tokens["episodic"] > 2500


def test_episodic_lines_are_grouped_under_a_dated_header_in_time_order() -> None:
    a = _episode(2, "second", 1.0, "Relevant history", 0, "s-1")
    b = _episode(1, "first", 0.5, "Relevant history", 0, "s-1")
    c = _episode(3, "later day", 0.9, "Relevant history", 3, "s-1")
    plan = budget_plan(config=TenantSettings(), max_tokens=4000, overrides={}, layers=LAYERS)
    prompt = assemble(offered=LayerCandidates(episodic=[a, b, c]), plan=plan, fmt="markdown").prompt
    assert prompt == (
        "## Relevant history\n### 1 Mar 2024, session s-1\n- user: first\n- user: second\n"
        "### 4 Mar 2024, session s-1\n- user: later day"
    )


def test_empty_store_gives_an_empty_prompt() -> None:
    plan = budget_plan(config=TenantSettings(), max_tokens=1000, overrides={}, layers=LAYERS)
    built = assemble(offered=LayerCandidates(), plan=plan, fmt="markdown")
    assert built.prompt == "" and built.tokens["total"] == 0


def test_default_budgets_follow_the_tenant_settings() -> None:
    plan = budget_plan(config=TenantSettings(), max_tokens=10_000, overrides={}, layers=LAYERS)
    assert (plan.procedural, plan.semantic, plan.episodic, plan.reserve, plan.memory) == (800, 1200, 3000, 5000, 5000)
    capped = budget_plan(config=TenantSettings(), max_tokens=200_000, overrides={}, layers=LAYERS)
    assert capped.episodic == 15_000
    only = budget_plan(config=TenantSettings(), max_tokens=10_000, overrides={"semantic": 50}, layers=("semantic",))
    assert (only.procedural, only.semantic, only.episodic, only.working) == (0, 50, 0, 0)


@pytest.mark.parametrize(
    ("max_tokens", "overrides", "pointer"),
    [
        (99, {}, "/max_tokens"),
        (200_001, {}, "/max_tokens"),
        (1000, {"episodic": -1}, "/budgets/episodic"),
        (1000, {"dreams": 10}, "/budgets/dreams"),
        (1000, {"reserve": 990}, "/budgets/reserve"),
    ],
)
def test_bad_budgets_name_the_field(max_tokens: int, overrides: dict[str, int], pointer: str) -> None:
    with pytest.raises(ValidationProblem) as exc:
        budget_plan(config=TenantSettings(), max_tokens=max_tokens, overrides=overrides, layers=LAYERS)
    assert exc.value.errors[0]["pointer"] == pointer


# Content as agents store it: words of letters (several scripts), digits, punctuation, apostrophes and
# emoji, joined by single spaces (what said_tokens requires; anything else is counted line by line).
said_words = st.lists(
    st.text(
        alphabet=st.sampled_from("abcXYZ'’sdtm0123456789.,:;!?-_()[]\"#@/éü日本ß€😀\u0301"), min_size=1, max_size=12
    ),
    min_size=1,
    max_size=25,
).map(" ".join)
speakers = st.sampled_from(["user", "assistant", "Caroline", "tool_result", "agent 2", "o'brien", "Ünal", "x1", ""])


@settings(max_examples=400, deadline=None)
@given(speaker=speakers, content=said_words)
def test_said_tokens_match_the_tokeniser_on_the_rendered_line(speaker: str, content: str) -> None:
    text = f"{speaker}: {content}" if speaker else content
    counts = said_tokens(speaker, content, count_tokens(content))
    assert counts == (count_tokens(text), count_tokens(item_line(_flat("procedural", 0, text, 1.0))))


def test_said_tokens_decline_a_missing_count() -> None:
    assert said_tokens("user", "hello there", 0) is None
    assert said_tokens("user", "", 3) is None

"""The budget invariant end to end: random stores and budgets through POST /v1/context."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.tokens import count_tokens
from tests.router.conftest import T0, believe, remember

pytestmark = pytest.mark.django_db

WORDS = ["printer", "tray", "Lisbon", "dog", "VPN", "invoice", "é", "日本", "the", "again", "#42", "ok", "🙂"]
lines = st.lists(st.sampled_from(WORDS), min_size=1, max_size=40).map(" ".join)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    episodes=st.lists(lines, min_size=0, max_size=25),
    facts=st.lists(lines, min_size=0, max_size=5),
    query=lines,
    max_tokens=st.integers(100, 3000),
    overrides=st.dictionaries(
        st.sampled_from(["procedural", "semantic", "episodic", "working"]), st.integers(0, 1500), max_size=4
    ),
    fmt=st.sampled_from(["markdown", "xml"]),
)
def test_context_never_exceeds_its_budget_and_counts_exactly(
    tenant_a, api_a, episodes, facts, query, max_tokens, overrides, fmt
) -> None:
    subject = f"s-{uuid.uuid4().hex[:8]}"
    if episodes:
        remember(tenant_a, episodes, subject=subject, session=f"{subject}-a", start=T0)
    for i, text in enumerate(facts):
        believe(tenant_a, subject=subject, attribute=f"a{i}", value=text[:50], statement=text,
                observed_at=T0 + timedelta(days=i))  # fmt: skip
    body = {"subject": subject, "session": f"{subject}-a", "query": query, "max_tokens": max_tokens,
            "budgets": overrides, "format": fmt}  # fmt: skip
    response = api_a.post("/v1/context", body, format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["tokens"]["total"] == count_tokens(data["prompt"])
    assert data["tokens"]["total"] <= data["budgets"]["memory"] <= max_tokens
    for layer in ("procedural", "semantic", "episodic"):
        assert data["tokens"][layer] <= data["budgets"]["granted"][layer]

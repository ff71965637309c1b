"""Matching: every kind of trigger, agent scope, ranking by strength and confidence, determinism."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.embedding import embed_one
from procedural.models import ProcedureStatus
from procedural.selectors import procedure_match
from procedural.services import procedure_outcome_record, procedure_set_status
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _match(tenant, **kw):
    with tenant_scope(tenant):
        return procedure_match(tenant=tenant, **kw)


def _names(matches) -> list[str]:
    return [m.procedure.name for m in matches]


def test_keyword_trigger(tenant_a, make_procedure) -> None:
    make_procedure(tenant_a, name="deploys", trigger={"keywords": ["deploy"]})
    [match] = _match(tenant_a, message="Can you DEPLOY the branch?")
    assert match.why == ['message mentions "deploy"']
    assert _match(tenant_a, message="the deployment worked") == []


def test_regex_trigger(tenant_a, make_procedure) -> None:
    make_procedure(tenant_a, name="tickets", trigger={"regexes": [r"\b[A-Z]{2,5}-\d{1,6}\b"]})
    [match] = _match(tenant_a, message="Look at OPS-1234 please")
    assert "/\\b[A-Z]{2,5}-\\d{1,6}\\b/" in match.why[0]
    assert _match(tenant_a, message="look at ops-1234") == []


def test_tool_name_and_status_trigger(tenant_a, make_procedure) -> None:
    make_procedure(tenant_a, name="billing 429", trigger={"tools": [{"name": "billing_api", "status": [429]}]})
    events = [{"kind": "tool_result", "payload": {"tool": "billing_api", "status_code": 429}}]
    [match] = _match(tenant_a, tool_events=events)
    assert 'tool "billing_api" returned 429' in match.why[0]
    assert _match(tenant_a, tool_events=[{"name": "billing_api", "status": 200}]) == []
    assert _match(tenant_a, tool_events=[{"name": "search_api", "status": 429}]) == []


def test_entity_topic_and_session_kind_triggers(tenant_a, make_procedure) -> None:
    make_procedure(tenant_a, name="stripe", trigger={"entities": ["Stripe"]})
    make_procedure(tenant_a, name="billing", trigger={"topics": ["billing"]})
    make_procedure(tenant_a, name="support", trigger={"session_kinds": ["support"]})
    assert _names(_match(tenant_a, entities=["stripe"])) == ["stripe"]
    assert _names(_match(tenant_a, topics=["Billing"])) == ["billing"]
    assert _names(_match(tenant_a, session_kind="support")) == ["support"]
    assert _match(tenant_a, entities=["paypal"], topics=["shipping"], session_kind="sales") == []


def test_semantic_trigger_on_the_description(tenant_a, make_procedure) -> None:
    make_procedure(
        tenant_a,
        name="refunds",
        trigger={"description": "the customer asks for a refund of a duplicate charge"},
    )
    message = "customer asks for a refund of a duplicate charge on the card"
    [match] = _match(tenant_a, message=message)
    assert match.why[0].startswith("message resembles the trigger")
    assert match.score_parts["semantic"] > 0
    [given] = _match(tenant_a, message=message, query_embedding=embed_one(message))
    assert given.score == pytest.approx(match.score)
    assert _match(tenant_a, message="what is the weather in Paris") == []


def test_agent_scoped_procedures_apply_to_that_agent_only(tenant_a, make_procedure) -> None:
    make_procedure(tenant_a, name="everyone", trigger={"keywords": ["deploy"]})
    make_procedure(tenant_a, name="ops only", agent="ops-bot", trigger={"keywords": ["deploy"]})
    assert sorted(_names(_match(tenant_a, message="deploy", agent="ops-bot"))) == ["everyone", "ops only"]
    assert _names(_match(tenant_a, message="deploy", agent="sales-bot")) == ["everyone"]
    assert _names(_match(tenant_a, message="deploy")) == ["everyone"]
    scoped = [m for m in _match(tenant_a, message="deploy", agent="ops-bot") if m.procedure.name == "ops only"]
    assert 'scoped to agent "ops-bot"' in scoped[0].why


def test_only_active_current_procedures_match(tenant_a, make_procedure) -> None:
    make_procedure(tenant_a, name="candidate", status=ProcedureStatus.CANDIDATE)
    gone = make_procedure(tenant_a, name="gone")
    with tenant_scope(tenant_a):
        procedure_set_status(tenant=tenant_a, procedure_id=gone.pk, status="deprecated", actor="test")
    assert _match(tenant_a, message="deploy") == []


def test_a_stronger_match_ranks_first_at_equal_confidence(tenant_a, make_procedure) -> None:
    make_procedure(tenant_a, name="keyword only", trigger={"keywords": ["deploy"]})
    make_procedure(
        tenant_a,
        name="keyword and tool",
        trigger={"keywords": ["deploy"], "tools": [{"name": "ci", "status": ["error"]}]},
    )
    matches = _match(tenant_a, message="deploy failed", tool_events=[{"name": "ci", "status": 500}])
    assert _names(matches) == ["keyword and tool", "keyword only"]
    assert matches[0].strength > matches[1].strength
    assert matches[0].confidence == matches[1].confidence


def test_proven_rules_outrank_unproven_ones_at_equal_strength(tenant_a, make_procedure) -> None:
    make_procedure(tenant_a, name="unproven")
    proven = make_procedure(tenant_a, name="proven")
    with tenant_scope(tenant_a):
        for _ in range(6):
            procedure_outcome_record(
                tenant=tenant_a,
                procedure_id=proven.pk,
                applied=True,
                success=True,
                signal=None,
                session_external_id=None,
                episode_id=None,
            )
    matches = _match(tenant_a, message="deploy now")
    assert _names(matches) == ["proven", "unproven"]
    assert matches[0].confidence > matches[1].confidence
    assert matches[0].score == pytest.approx(matches[0].strength * matches[0].confidence, abs=1e-6)


def test_same_state_and_request_give_the_same_answer(tenant_a, make_procedure) -> None:
    for i in range(5):
        make_procedure(tenant_a, name=f"rule {i}")
    first = [(m.procedure.pk, m.score) for m in _match(tenant_a, message="deploy")]
    assert first == [(m.procedure.pk, m.score) for m in _match(tenant_a, message="deploy")]
    assert [pk for pk, _ in first] == sorted(pk for pk, _ in first)  # ties broken by id


def test_limit_is_respected(tenant_a, make_procedure) -> None:
    for i in range(4):
        make_procedure(tenant_a, name=f"rule {i}")
    assert len(_match(tenant_a, message="deploy", limit=2)) == 2


def test_matching_takes_two_queries_whatever_the_number_of_rules(tenant_a, make_procedure) -> None:
    for i in range(10):
        make_procedure(tenant_a, name=f"rule {i}")
    with tenant_scope(tenant_a), CaptureQueriesContext(connection) as ctx:
        assert len(procedure_match(tenant=tenant_a, message="deploy")) == 10
    assert len(ctx.captured_queries) == 2  # the trigger columns of all, the full rows of the matches
    for i in range(10):
        make_procedure(tenant_a, name=f"semantic {i}", trigger={"description": f"deploying service {i}"})
    with tenant_scope(tenant_a), CaptureQueriesContext(connection) as ctx:
        procedure_match(tenant=tenant_a, message="deploy", query_embedding=[0.0] * 383 + [1.0])
    assert len(ctx.captured_queries) == 2  # the distances come with the first query
    with tenant_scope(tenant_a), CaptureQueriesContext(connection) as ctx:
        procedure_match(tenant=tenant_a, message="deploy")
    assert len(ctx.captured_queries) == 3  # the message is embedded, then the distances fetched


def test_another_tenants_procedures_never_match(tenant_a, tenant_b, make_procedure) -> None:
    make_procedure(tenant_b, name="b's rule")
    assert _match(tenant_a, message="deploy") == []
    assert _names(_match(tenant_b, message="deploy")) == ["b's rule"]


def test_the_regex_budget_counts_regex_time_only(tenant_a, make_procedure, monkeypatch) -> None:
    """Many rules evaluated before a regex rule must not use up its time; only regexes spend it."""
    import time

    from procedural import triggers

    for i in range(30):
        make_procedure(tenant_a, name=f"keyword {i}", trigger={"keywords": [f"word{i}"]})
    make_procedure(tenant_a, name="regex", trigger={"regexes": [r"\bOPS-\d+\b"]})
    real = triggers.trigger_evaluate

    def slow(trigger, situation):  # every rule takes 5 ms outside regexes: 150 ms in all
        time.sleep(0.005)
        return real(trigger, situation)

    monkeypatch.setattr("procedural.selectors.trigger_evaluate", slow)
    assert [m.procedure.name for m in _match(tenant_a, message="see OPS-12")] == ["regex"]

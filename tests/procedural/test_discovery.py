"""Discovery from experience: the planted pattern is found, noise invents nothing, candidates wait
for approval with their evidence, and a pattern is proposed once."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from episodic.models import Session
from procedural.discovery import (
    SessionSequence,
    Thresholds,
    collapse,
    episode_token,
    fisher_greater,
    mine_patterns,
    session_patterns,
)
from procedural.models import Procedure, ProcedureEvent, ProcedureEventKind, ProcedureSource, ProcedureStatus
from procedural.selectors import procedure_match
from procedural.services import procedure_approve, procedures_discover
from procedural.tasks import discover_procedures
from tenants.scope import tenant_scope
from tests.factories.procedural import (
    FAILURE,
    SUCCESS,
    Step,
    decision,
    make_ended_sessions,
    message,
    tool_call,
    tool_result,
)

NOISE = [
    lambda: message("user"),
    lambda: message("assistant"),
    lambda: tool_call("search"),
    lambda: tool_result("search", 200),
    lambda: tool_call("db"),
    lambda: tool_result("db", "ok"),
    lambda: decision("escalate"),
    lambda: decision("answer"),
    lambda: tool_call("billing_api"),
    lambda: tool_result("billing_api", 200),
]
PLANTED = [tool_result("billing_api", 429), decision("backoff"), tool_call("billing_api")]
PLANTED_TOKENS = ("tool_result:billing_api:429", "decision:backoff", "tool_call:billing_api")
THRESHOLDS = Thresholds(min_support=0.3, min_confidence=0.7, min_lift=1.5, min_sessions=20)


def _noise(rnd: random.Random) -> list[Step]:
    return [rnd.choice(NOISE)() for _ in range(rnd.randint(6, 14))]


def generated(seed: int, *, successes: int = 30, failures: int = 30, planted: bool = True) -> list[tuple]:
    """Successful sessions mostly back off after a 429; failed ones mostly retry at once."""
    rnd = random.Random(seed)
    out = []
    for i in range(successes + failures):
        ok = i < successes
        steps = _noise(rnd)
        at = rnd.randint(0, len(steps))
        if planted and rnd.random() < (0.85 if ok else 0.05):
            steps[at:at] = PLANTED
        elif planted and not ok and rnd.random() < 0.7:
            steps[at:at] = [tool_result("billing_api", 429), tool_call("billing_api")]
        out.append((f"{'ok' if ok else 'ko'}-{seed}-{i}", SUCCESS if ok else FAILURE, steps))
    if not planted:
        rnd.shuffle(out)
        out = [(ext, SUCCESS if rnd.random() < 0.5 else FAILURE, steps) for ext, _, steps in out]
    return out


def _sequences(rows: list[tuple]) -> list[SessionSequence]:
    return [
        SessionSequence(i, ext, outcome == SUCCESS, collapse(episode_token(s.kind, s.role, s.payload) for s in steps))
        for i, (ext, outcome, steps) in enumerate(rows)
    ]


# --- the algorithm, without the database ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_the_planted_pattern_is_found_alone(seed: int) -> None:
    patterns, summary = mine_patterns(_sequences(generated(seed)), THRESHOLDS)
    assert [p.items for p in patterns] == [PLANTED_TOKENS]
    found = patterns[0]
    assert found.support >= 0.3 and found.confidence >= 0.7 and found.lift >= 1.5 and found.p_value <= 0.01
    assert summary.successful == summary.failed == 30


@pytest.mark.parametrize("seed", range(20))
def test_noise_invents_nothing(seed: int) -> None:
    """Outcomes drawn independently of what happened: nothing may come out, however often the same
    tokens (the planted ones included) occur."""
    rnd = random.Random(1000 + seed)
    vocabulary = [*NOISE, *(lambda s=s: s for s in PLANTED)]
    rows = [
        (
            f"n-{i}",
            SUCCESS if rnd.random() < rnd.choice([0.3, 0.5, 0.7]) else FAILURE,
            [rnd.choice(vocabulary)() for _ in range(rnd.randint(4, 18))],
        )
        for i in range(rnd.choice([40, 80, 160]))
    ]
    patterns, summary = mine_patterns(_sequences(rows), THRESHOLDS)
    assert patterns == [], [p.figures() for p in patterns]
    assert summary.patterns_counted > 100


def test_a_pattern_as_common_in_failures_is_not_proposed() -> None:
    rnd = random.Random(7)
    rows = []
    for i in range(60):
        steps = _noise(rnd)
        if rnd.random() < 0.8:
            steps[2:2] = PLANTED
        rows.append((f"s-{i}", SUCCESS if i % 2 else FAILURE, steps))
    patterns, _ = mine_patterns(_sequences(rows), THRESHOLDS)
    assert all("decision:backoff" not in p.items for p in patterns)


def test_too_few_sessions_are_not_mined() -> None:
    patterns, summary = mine_patterns(_sequences(generated(1, successes=8, failures=8)), THRESHOLDS)
    assert patterns == [] and "needs 20" in summary.skipped_reason


def test_tokens_carry_kind_and_tool_never_text() -> None:
    assert (
        episode_token("tool_result", "tool", {"tool": "Billing API", "status_code": 429})
        == "tool_result:billing_api:429"
    )
    assert episode_token("tool_call", "assistant", {"name": "db"}) == "tool_call:db"
    assert episode_token("decision", "assistant", {"action": "Back off"}) == "decision:back_off"
    assert (
        episode_token("decision", "assistant", {"action": "a sentence that is far too long to be an action slug ok"})
        == "decision"
    )
    assert episode_token("message", "user", {"text": "secret"}) == "message:user"
    assert episode_token("outcome", "", {}) is None
    assert collapse(["a", "a", None, "b", "a"]) == ("a", "b", "a")


@given(st.lists(st.sampled_from("abcd"), max_size=14))
def test_every_pattern_is_an_ordered_windowed_subsequence(tokens: list[str]) -> None:
    patterns = session_patterns(tokens, max_length=3, window=3)
    for pattern in patterns:
        assert 2 <= len(pattern) <= 3
        it = iter(tokens)
        assert all(t in it for t in pattern)
    # ...and none is missed: every pair within the window is a pattern, every triple of neighbours too.
    for i in range(len(tokens)):
        for j in range(i + 1, min(len(tokens), i + 4)):
            assert (tokens[i], tokens[j]) in patterns
        if i + 2 < len(tokens):
            assert (tokens[i], tokens[i + 1], tokens[i + 2]) in patterns


@given(st.integers(1, 40), st.integers(1, 40), st.data())
def test_fisher_p_is_a_probability_and_falls_with_more_successes(successes: int, failures: int, data) -> None:
    draws = data.draw(st.integers(1, successes + failures))
    low = max(0, draws - failures)
    x = data.draw(st.integers(low, min(successes, draws)))
    p = fisher_greater(with_success=x, with_failure=draws - x, successes=successes, failures=failures)
    assert 0.0 <= p <= 1.0
    if x == low:
        assert p == pytest.approx(1.0)
    if x < min(successes, draws):
        q = fisher_greater(with_success=x + 1, with_failure=draws - x - 1, successes=successes, failures=failures)
        assert q <= p


# --- through the database -------------------------------------------------------------------------


@pytest.mark.django_db
def test_discovery_proposes_a_candidate_with_evidence_for_approval(tenant_a) -> None:
    make_ended_sessions(tenant=tenant_a, sessions=generated(3))
    with tenant_scope(tenant_a):
        report = procedures_discover(tenant=tenant_a)
        [candidate] = Procedure.objects.for_tenant(tenant_a).filter(pk__in=report.created)
        event = ProcedureEvent.objects.for_tenant(tenant_a).get(procedure=candidate)
    assert (candidate.source, candidate.status) == (ProcedureSource.EXPERIENCE, ProcedureStatus.CANDIDATE)
    assert candidate.evidence["pattern"] == list(PLANTED_TOKENS)
    assert len(candidate.evidence["example_session_ids"]) == 5
    with tenant_scope(tenant_a):
        examples = Session.objects.for_tenant(tenant_a).filter(pk__in=candidate.evidence["example_session_ids"])
        assert all(s.outcome == SUCCESS and s.external_id.startswith("ok-3-") for s in examples)
        assert examples.count() == 5
    assert candidate.evidence["sessions_considered"] == 60
    assert candidate.trigger == {"tools": [{"name": "billing_api", "status": [429]}]}
    assert candidate.steps == ["decide to backoff", "call billing_api"]
    assert event.kind == ProcedureEventKind.DISCOVERED and event.actor == "system:discovery"
    # Not applied until an operator approves it.
    events = [{"name": "billing_api", "status": 429}]
    with tenant_scope(tenant_a):
        assert procedure_match(tenant=tenant_a, tool_events=events) == []
        procedure_approve(tenant=tenant_a, procedure_id=candidate.pk, actor="operator:ana")
        [match] = procedure_match(tenant=tenant_a, tool_events=events)
    assert match.procedure.pk == candidate.pk


@pytest.mark.django_db
def test_a_pattern_is_proposed_once(tenant_a) -> None:
    make_ended_sessions(tenant=tenant_a, sessions=generated(4))
    with tenant_scope(tenant_a):
        first = procedures_discover(tenant=tenant_a)
        second = procedures_discover(tenant=tenant_a)
        assert len(first.created) == 1 and second.created == [] and second.refreshed == first.created
        procedure_approve(tenant=tenant_a, procedure_id=first.created[0], actor="operator:ana")
        third = procedures_discover(tenant=tenant_a)
        assert third.created == [] and third.known == first.created
        assert Procedure.objects.for_tenant(tenant_a).count() == 1


@pytest.mark.django_db
def test_discovery_on_noise_writes_nothing(tenant_a) -> None:
    make_ended_sessions(tenant=tenant_a, sessions=generated(5, planted=False))
    with tenant_scope(tenant_a):
        report = procedures_discover(tenant=tenant_a)
        assert report.created == [] and report.summary.sessions == 60
        assert Procedure.objects.for_tenant(tenant_a).count() == 0


@pytest.mark.django_db
def test_unlabelled_old_and_open_sessions_are_ignored(tenant_a) -> None:
    from datetime import timedelta

    from django.utils import timezone

    rows = generated(6)
    unlabelled = [(f"u-{ext}", None, steps) for ext, _, steps in rows]
    old = [(f"old-{ext}", outcome, steps) for ext, outcome, steps in rows]
    make_ended_sessions(tenant=tenant_a, sessions=unlabelled)
    make_ended_sessions(tenant=tenant_a, sessions=old, ended_at=timezone.now() - timedelta(days=400))
    with tenant_scope(tenant_a):
        report = procedures_discover(tenant=tenant_a)
    assert report.summary.sessions == 0 and report.created == []


@pytest.mark.django_db
def test_the_periodic_task_fans_out_per_tenant_and_stays_in_each(tenant_a, tenant_b) -> None:
    make_ended_sessions(tenant=tenant_a, sessions=generated(8))
    make_ended_sessions(tenant=tenant_b, sessions=generated(9, planted=False))
    assert discover_procedures.delay().get() >= 2
    with tenant_scope(tenant_a):
        assert Procedure.objects.for_tenant(tenant_a).filter(status=ProcedureStatus.CANDIDATE).count() == 1
    with tenant_scope(tenant_b):
        assert Procedure.objects.for_tenant(tenant_b).count() == 0


@pytest.mark.django_db
def test_evidence_names_no_subject(tenant_a) -> None:
    """Example sessions are kept by primary key: the evidence holds no external id, and once erasure
    removes a session its number points at nothing."""
    make_ended_sessions(tenant=tenant_a, sessions=generated(3))
    with tenant_scope(tenant_a):
        report = procedures_discover(tenant=tenant_a)
        candidate = Procedure.objects.for_tenant(tenant_a).get(pk=report.created[0])
        external_ids = set(Session.objects.for_tenant(tenant_a).values_list("external_id", flat=True))
    flat = repr(candidate.evidence) + repr(candidate.trigger) + candidate.name + candidate.description
    assert all(isinstance(i, int) for i in candidate.evidence["example_session_ids"])
    assert not [e for e in external_ids if e in flat]
    assert "user-1" not in flat

"""Outcomes: recording, idempotency per episode, confidence moving, automatic deprecation with its
figures, operator reactivation, and refusals that write nothing."""

from __future__ import annotations

import pytest

from core.errors import Conflict, NotFound, ValidationProblem
from procedural.models import Procedure, ProcedureEvent, ProcedureEventKind, ProcedureOutcome, ProcedureStatus
from procedural.services import (
    ACTOR_AUTO_DEPRECATION,
    ProcedureNotActive,
    procedure_outcome_record,
    procedure_reactivate,
    procedure_set_status,
)
from tenants.scope import tenant_scope
from tests.factories.episodic import EpisodeFactory

pytestmark = pytest.mark.django_db


def _record(tenant, procedure_id, **kw):
    values = {"applied": True, "success": True, "signal": None, "session_external_id": None, "episode_id": None}
    values.update(kw)
    with tenant_scope(tenant):
        return procedure_outcome_record(tenant=tenant, procedure_id=procedure_id, **values)


def _reload(tenant, procedure) -> Procedure:
    with tenant_scope(tenant):
        return Procedure.objects.for_tenant(tenant).get(pk=procedure.pk)


def _events(tenant, procedure) -> list[ProcedureEvent]:
    with tenant_scope(tenant):
        return list(ProcedureEvent.objects.for_tenant(tenant).filter(lineage=procedure.lineage).order_by("id"))


def test_outcomes_update_the_statistics_and_move_confidence(tenant_a, make_procedure) -> None:
    procedure = make_procedure(tenant_a)
    start = procedure.confidence
    _record(tenant_a, procedure.pk, success=True)
    up = _reload(tenant_a, procedure)
    assert (up.applications, up.successes, up.failures) == (1, 1, 0)
    assert up.confidence > start
    _record(tenant_a, procedure.pk, success=False)
    _record(tenant_a, procedure.pk, success=False)
    down = _reload(tenant_a, procedure)
    assert (down.applications, down.successes, down.failures) == (3, 1, 2)
    assert down.confidence < up.confidence
    _record(tenant_a, procedure.pk, applied=False, success=None)
    assert _reload(tenant_a, procedure).not_applied == 1
    assert _reload(tenant_a, procedure).confidence == down.confidence


def test_a_signal_stands_for_success_when_success_is_not_given(tenant_a, make_procedure) -> None:
    procedure = make_procedure(tenant_a)
    assert _record(tenant_a, procedure.pk, success=None, signal=0.8).success is True
    assert _record(tenant_a, procedure.pk, success=None, signal=-0.5).success is False
    assert _record(tenant_a, procedure.pk, success=None, signal=None).success is None
    assert (_reload(tenant_a, procedure).successes, _reload(tenant_a, procedure).failures) == (1, 1)


def test_outcomes_are_idempotent_per_procedure_and_episode(tenant_a, make_procedure) -> None:
    procedure = make_procedure(tenant_a)
    episode = EpisodeFactory(tenant=tenant_a, session__external_id="s-1")
    first = _record(tenant_a, procedure.pk, episode_id=episode.pk)
    again = _record(tenant_a, procedure.pk, episode_id=episode.pk)
    assert again.pk == first.pk and first.session_external_id == "s-1"
    assert _reload(tenant_a, procedure).successes == 1
    with pytest.raises(Conflict):
        _record(tenant_a, procedure.pk, episode_id=episode.pk, success=False)
    other = make_procedure(tenant_a, name="other rule")
    assert _record(tenant_a, other.pk, episode_id=episode.pk).pk != first.pk


def test_episode_must_exist_in_the_tenant_and_the_session(tenant_a, tenant_b, make_procedure) -> None:
    procedure = make_procedure(tenant_a)
    foreign = EpisodeFactory(tenant=tenant_b)
    mine = EpisodeFactory(tenant=tenant_a, session__external_id="s-mine")
    with pytest.raises(ValidationProblem) as info:
        _record(tenant_a, procedure.pk, episode_id=foreign.pk)
    assert info.value.errors[0]["pointer"] == "/episode"
    with pytest.raises(ValidationProblem):
        _record(tenant_a, procedure.pk, episode_id=mine.pk, session_external_id="s-other")
    with tenant_scope(tenant_a):
        assert ProcedureOutcome.objects.for_tenant(tenant_a).count() == 0


def test_bad_values_are_refused(tenant_a, make_procedure) -> None:
    procedure = make_procedure(tenant_a)
    with pytest.raises(ValidationProblem):
        _record(tenant_a, procedure.pk, signal=1.5)
    with pytest.raises(ValidationProblem):
        _record(tenant_a, procedure.pk, applied=False, success=True)
    with pytest.raises(NotFound):
        _record(tenant_a, 10**9)


def test_automatic_deprecation_logs_its_figures(tenant_a, make_procedure) -> None:
    tenant_a.settings = {"procedure_min_applications": 8, "procedure_deprecate_below": 0.4}
    tenant_a.save()
    procedure = make_procedure(tenant_a)
    for _ in range(7):
        _record(tenant_a, procedure.pk, success=False)
    assert _reload(tenant_a, procedure).status == ProcedureStatus.ACTIVE  # 7 < 8 applications
    _record(tenant_a, procedure.pk, success=False)
    assert _reload(tenant_a, procedure).status == ProcedureStatus.DEPRECATED
    event = _events(tenant_a, procedure)[-1]
    assert event.kind == ProcedureEventKind.DEPRECATED and event.actor == ACTOR_AUTO_DEPRECATION
    window = event.figures["window"]
    assert window["applications"] == 8 and window["successes"] == 0
    assert window["upper"] < 0.4 and window["min_applications"] == 8
    assert "0 successes in 8 applications" in event.reason


def test_a_working_rule_is_not_deprecated(tenant_a, make_procedure) -> None:
    tenant_a.settings = {"procedure_min_applications": 5}
    tenant_a.save()
    procedure = make_procedure(tenant_a)
    for i in range(20):
        _record(tenant_a, procedure.pk, success=i % 3 != 0)
    assert _reload(tenant_a, procedure).status == ProcedureStatus.ACTIVE


def test_outcomes_for_a_deprecated_or_candidate_procedure_write_nothing(tenant_a, make_procedure) -> None:
    procedure = make_procedure(tenant_a)
    candidate = make_procedure(tenant_a, name="candidate", status=ProcedureStatus.CANDIDATE)
    with tenant_scope(tenant_a):
        procedure_set_status(tenant=tenant_a, procedure_id=procedure.pk, status="deprecated", actor="op")
    for target in (procedure, candidate):
        with pytest.raises(ProcedureNotActive):
            _record(tenant_a, target.pk)
    with tenant_scope(tenant_a):
        assert ProcedureOutcome.objects.for_tenant(tenant_a).count() == 0
    assert _reload(tenant_a, procedure).applications == 0


def test_reactivation_gives_a_fresh_hearing(tenant_a, make_procedure) -> None:
    tenant_a.settings = {"procedure_min_applications": 5}
    tenant_a.save()
    procedure = make_procedure(tenant_a)
    for _ in range(5):
        _record(tenant_a, procedure.pk, success=False)
    assert _reload(tenant_a, procedure).status == ProcedureStatus.DEPRECATED
    with tenant_scope(tenant_a):
        procedure_reactivate(tenant=tenant_a, procedure_id=procedure.pk, actor="operator:ana", reason="fixed the tool")
    back = _reload(tenant_a, procedure)
    assert back.status == ProcedureStatus.ACTIVE
    assert (back.failures, back.window_failures) == (5, 0)  # history kept, the verdict starts over
    event = _events(tenant_a, procedure)[-1]
    assert (event.kind, event.actor, event.reason) == (ProcedureEventKind.REACTIVATED, "operator:ana", "fixed the tool")
    assert event.figures["failures"] == 5
    for _ in range(4):
        _record(tenant_a, procedure.pk, success=False)
    assert _reload(tenant_a, procedure).status == ProcedureStatus.ACTIVE
    _record(tenant_a, procedure.pk, success=False)
    assert _reload(tenant_a, procedure).status == ProcedureStatus.DEPRECATED


def test_status_transitions_are_checked(tenant_a, make_procedure) -> None:
    procedure = make_procedure(tenant_a)
    with tenant_scope(tenant_a), pytest.raises(ValidationProblem):
        procedure_set_status(tenant=tenant_a, procedure_id=procedure.pk, status="candidate", actor="op")
    with tenant_scope(tenant_a), pytest.raises(ValidationProblem):
        procedure_set_status(tenant=tenant_a, procedure_id=procedure.pk, status="archived", actor="op")


def test_stats_count_current_procedures_and_all_outcomes(tenant_a, tenant_b, make_procedure) -> None:
    from procedural.selectors import procedure_stats
    from procedural.services import procedure_update

    kept = make_procedure(tenant_a, name="kept")
    make_procedure(tenant_a, name="candidate", status=ProcedureStatus.CANDIDATE)
    make_procedure(tenant_b, name="b's")
    _record(tenant_a, kept.pk, success=True)
    _record(tenant_a, kept.pk, success=False)
    _record(tenant_a, kept.pk, applied=False, success=None)
    with tenant_scope(tenant_a):
        procedure_update(tenant=tenant_a, procedure_id=kept.pk, actor="op", changes={"name": "kept, v2"})
        stats = procedure_stats(tenant=tenant_a)
    assert stats == {
        "active": 1,
        "candidates": 1,
        "deprecated": 0,
        "outcomes": 3,
        "applied": 2,
        "successes": 1,
        "failures": 1,
        "success_rate": 0.5,
    }

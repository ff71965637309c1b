"""Version history: an edit is a new version; statistics stay with the version that earned them."""

from __future__ import annotations

import pytest

from core.errors import Conflict, ValidationProblem
from procedural.models import Procedure, ProcedureEventKind, ProcedureStatus
from procedural.selectors import procedure_events, procedure_match, procedure_versions
from procedural.services import procedure_outcome_record, procedure_update
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _update(tenant, procedure_id, **changes):
    with tenant_scope(tenant):
        return procedure_update(tenant=tenant, procedure_id=procedure_id, actor="operator:ana", changes=changes)


def _succeed(tenant, procedure_id, n: int) -> None:
    with tenant_scope(tenant):
        for _ in range(n):
            procedure_outcome_record(
                tenant=tenant,
                procedure_id=procedure_id,
                applied=True,
                success=True,
                signal=None,
                session_external_id=None,
                episode_id=None,
            )


def test_an_edit_creates_a_new_version_with_fresh_statistics(tenant_a, make_procedure) -> None:
    v1 = make_procedure(tenant_a, name="deploys", trigger={"keywords": ["deploy"], "description": "deploying"})
    _succeed(tenant_a, v1.pk, 3)
    v2 = _update(tenant_a, v1.pk, behaviour="Deploy on Tuesdays only.", steps=["check the day", "deploy"])
    assert v2.pk != v1.pk and (v2.lineage, v2.version) == (v1.lineage, 2)
    assert (v2.applications, v2.successes) == (0, 0)
    assert v2.trigger_text == "deploying" and v2.is_current and v2.status == ProcedureStatus.ACTIVE
    with tenant_scope(tenant_a):
        old = Procedure.objects.for_tenant(tenant_a).get(pk=v1.pk)
        versions = procedure_versions(tenant=tenant_a, procedure_id=v2.pk)
        events = procedure_events(tenant=tenant_a, lineage=v1.lineage)
    assert (old.is_current, old.superseded_by_id, old.successes) == (False, v2.pk, 3)
    assert [v.version for v in versions] == [1, 2]
    edited = events[-1]
    assert edited.kind == ProcedureEventKind.EDITED and edited.procedure_id == v2.pk
    assert edited.figures["changed"] == ["behaviour", "steps"]
    assert edited.figures["previous"]["successes"] == 3


def test_outcomes_reported_late_stay_with_the_old_version(tenant_a, make_procedure) -> None:
    v1 = make_procedure(tenant_a)
    v2 = _update(tenant_a, v1.pk, name="renamed")
    _succeed(tenant_a, v1.pk, 2)
    with tenant_scope(tenant_a):
        assert Procedure.objects.for_tenant(tenant_a).get(pk=v1.pk).successes == 2
        assert Procedure.objects.for_tenant(tenant_a).get(pk=v2.pk).successes == 0


def test_only_the_current_version_matches(tenant_a, make_procedure) -> None:
    v1 = make_procedure(tenant_a, trigger={"keywords": ["deploy"]})
    v2 = _update(tenant_a, v1.pk, trigger={"keywords": ["release"]})
    with tenant_scope(tenant_a):
        assert procedure_match(tenant=tenant_a, message="deploy") == []
        assert [m.procedure.pk for m in procedure_match(tenant=tenant_a, message="release")] == [v2.pk]


def test_editing_an_old_version_is_a_conflict(tenant_a, make_procedure) -> None:
    v1 = make_procedure(tenant_a)
    v2 = _update(tenant_a, v1.pk, name="second")
    with pytest.raises(Conflict) as info:
        _update(tenant_a, v1.pk, name="third")
    assert info.value.extra["current_id"] == v2.pk


def test_an_edit_that_changes_nothing_makes_no_version(tenant_a, make_procedure) -> None:
    v1 = make_procedure(tenant_a, name="same")
    assert _update(tenant_a, v1.pk, name="  same ").pk == v1.pk


def test_a_bad_edit_writes_nothing(tenant_a, make_procedure) -> None:
    v1 = make_procedure(tenant_a)
    with pytest.raises(ValidationProblem) as info:
        _update(tenant_a, v1.pk, trigger={"regexes": ["(a+)+"]})
    assert info.value.errors[0]["pointer"] == "/trigger/regexes/0"
    with tenant_scope(tenant_a):
        assert Procedure.objects.for_tenant(tenant_a).filter(lineage=v1.lineage).count() == 1


def test_edit_and_status_in_one_patch(tenant_a, make_procedure) -> None:
    candidate = make_procedure(tenant_a, status=ProcedureStatus.CANDIDATE, source="experience")
    approved = _update(tenant_a, candidate.pk, name="tidied up", status="active")
    assert (approved.version, approved.status) == (2, ProcedureStatus.ACTIVE)
    with tenant_scope(tenant_a):
        kinds = [e.kind for e in procedure_events(tenant=tenant_a, lineage=candidate.lineage)]
    assert kinds == [ProcedureEventKind.CREATED, ProcedureEventKind.EDITED, ProcedureEventKind.APPROVED]

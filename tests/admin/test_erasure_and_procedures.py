"""Erasure requests filed and followed in the admin; procedures approved, deprecated and reactivated
there, each through the owning app's services."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from episodic.models import Episode
from privacy.models import ErasureRequest, ErasureStatus
from procedural.models import Procedure, ProcedureEvent, ProcedureStatus
from procedural.services import procedure_create, procedure_deprecate
from semantic.models import Fact
from tenants.scope import tenant_scope
from tests.factories.admin import Memory

pytestmark = pytest.mark.django_db

ADD = "/admin/privacy/erasurerequest/add/"


def test_operator_files_an_erasure_and_follows_it_to_the_receipt(
    op_client: Client, memory_a: Memory, memory_b: Memory, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = op_client.post(
            ADD, {"tenant": str(memory_a.tenant.id), "subject": "alice", "reason": "GDPR art. 17", "confirmed": "yes"}
        )
    assert response.status_code == 302
    assert callbacks, "the erasure task is enqueued after the commit"
    with tenant_scope(memory_a.tenant):
        request = ErasureRequest.objects.get()
        assert (request.status, request.subject, request.requested_by) == (ErasureStatus.DONE, "", "operator:op-a")
        assert Episode.objects.filter(subject="alice").count() == 0
        assert Fact.objects.filter(subject="alice").count() == 0
    assert response["Location"] == f"/admin/privacy/erasurerequest/{request.pk}/change/"
    page = op_client.get(response["Location"]).content.decode()
    assert request.subject_hash in page and "rows removed" in page and "left after verification" in page
    assert '<pre class="engram-json">' not in page  # a readable receipt, not JSON dumps
    assert "alice" not in page
    listing = op_client.get("/admin/privacy/erasurerequest/").content.decode()
    assert str(request.pk)[:8] in listing
    with tenant_scope(memory_b.tenant):
        assert Episode.objects.filter(subject="bob").count() == len(memory_b.episodes)


def test_an_erasure_for_another_tenant_or_without_subject_is_refused(
    op_client: Client, memory_a: Memory, memory_b: Memory
) -> None:
    response = op_client.post(ADD, {"tenant": str(memory_b.tenant.id), "subject": "bob"})
    assert response.status_code == 200 and "tenant" in response.context["adminform"].form.errors
    response = op_client.post(ADD, {"tenant": str(memory_a.tenant.id), "subject": ""})
    assert "subject" in response.context["adminform"].form.errors
    for tenant in (memory_a.tenant, memory_b.tenant):
        with tenant_scope(tenant):
            assert not ErasureRequest.objects.exists()


def test_the_add_form_preselects_the_operators_only_tenant(op_client: Client, memory_a: Memory) -> None:
    form = op_client.get(ADD).context["adminform"].form
    assert str(form.initial["tenant"]) == str(memory_a.tenant.id)
    assert list(form.fields) == ["tenant", "subject", "reason"]


@pytest.fixture
def procedures(tenant_a: Any) -> dict[str, Procedure]:
    with tenant_scope(tenant_a):
        active = procedure_create(
            tenant=tenant_a,
            name="deploys",
            behaviour="Check CI first.",
            trigger={"keywords": ["deploy"]},
            created_by="test",
        )
        candidate = procedure_create(
            tenant=tenant_a,
            name="tickets",
            behaviour="Link the ticket.",
            trigger={"keywords": ["ticket"]},
            status=ProcedureStatus.CANDIDATE,
        )
        old = procedure_create(tenant=tenant_a, name="retries", behaviour="Back off.", trigger={"keywords": ["retry"]})
        procedure_deprecate(tenant=tenant_a, procedure_id=old.pk, actor="system", reason="falling success")
    return {"active": active, "candidate": candidate, "deprecated": old}


def _status(tenant: Any, procedure: Procedure) -> str:
    with tenant_scope(tenant):
        return Procedure.objects.get(pk=procedure.pk).status


def test_procedure_actions_go_through_the_services_and_are_logged(
    op_client: Client, tenant_a: Any, procedures: dict[str, Procedure]
) -> None:
    def act(action: str, *names: str) -> Any:
        ids = [str(procedures[n].pk) for n in names]
        return op_client.post("/admin/procedural/procedure/", {"action": action, "_selected_action": ids}, follow=True)

    act("approve_selected", "candidate")
    act("reactivate_selected", "deprecated", "active")
    assert _status(tenant_a, procedures["candidate"]) == ProcedureStatus.ACTIVE
    assert _status(tenant_a, procedures["deprecated"]) == ProcedureStatus.ACTIVE
    act("deprecate_selected", "active")
    assert _status(tenant_a, procedures["active"]) == ProcedureStatus.DEPRECATED
    with tenant_scope(tenant_a):
        by_operator = set(ProcedureEvent.objects.filter(actor="operator:op-a").values_list("procedure_id", "kind"))
    assert by_operator == {
        (procedures["candidate"].pk, "approved"),
        (procedures["deprecated"].pk, "reactivated"),
        (procedures["active"].pk, "deprecated"),
    }


def test_approving_what_is_not_a_candidate_is_reported(
    op_client: Client, tenant_a: Any, procedures: dict[str, Procedure]
) -> None:
    response = op_client.post(
        "/admin/procedural/procedure/",
        {"action": "approve_selected", "_selected_action": [str(procedures["deprecated"].pk)]},
        follow=True,
    )
    assert any("not a candidate" in str(m) for m in response.context["messages"])
    assert _status(tenant_a, procedures["deprecated"]) == ProcedureStatus.DEPRECATED


def test_procedure_pages_show_statistics_and_decisions(op_client: Client, procedures: dict[str, Procedure]) -> None:
    listing = op_client.get("/admin/procedural/procedure/").content.decode()
    assert "deploys" in listing and "since (re)activation" in listing.lower()
    page = op_client.get(f"/admin/procedural/procedure/{procedures['deprecated'].pk}/change/").content.decode()
    assert "falling success" in page and "deprecated" in page


def test_a_waiting_erasure_shows_its_age_and_the_erasure_queue(
    op_client: Client, memory_a: Memory, django_capture_on_commit_callbacks: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from privacy.services import erasure_request_create

    # Filed while no worker runs: the task waits in the erasure queue (eager mode would run it at once).
    with django_capture_on_commit_callbacks(execute=False):
        request = erasure_request_create(tenant=memory_a.tenant, subject="alice")
    with tenant_scope(memory_a.tenant):
        ErasureRequest.objects.filter(pk=request.pk).update(created_at=timezone.now() - timedelta(minutes=12))

    page = op_client.get(f"/admin/privacy/erasurerequest/{request.pk}/change/").content.decode()
    listing = op_client.get("/admin/privacy/erasurerequest/").content.decode()

    assert "waiting 12\xa0minutes" in page and "not started" in page
    assert "erasure queue" in page
    assert "waiting 12\xa0minutes" in listing


def test_filing_shows_the_subjects_data_first_and_files_nothing_until_confirmed(
    op_client: Client, memory_a: Memory
) -> None:
    data = {"tenant": str(memory_a.tenant.id), "subject": "alice", "reason": "GDPR art. 17"}
    response = op_client.post(ADD, data)
    body = response.content.decode()
    assert response.status_code == 200
    counts = dict(response.context["counts"])
    assert counts["episodes"] == len(memory_a.episodes) and counts["facts"] >= 3
    assert 'name="confirmed" value="yes"' in body and "No data is held" not in body
    with tenant_scope(memory_a.tenant):
        assert not ErasureRequest.objects.exists()


def test_a_subject_with_no_data_is_flagged_before_filing_and_on_the_receipt(
    op_client: Client, memory_a: Memory, django_capture_on_commit_callbacks: Any
) -> None:
    data = {"tenant": str(memory_a.tenant.id), "subject": "alcie"}
    body = op_client.post(ADD, data).content.decode()
    assert "No data is held for this subject" in body
    with django_capture_on_commit_callbacks(execute=True):
        response = op_client.post(ADD, {**data, "confirmed": "yes"})
    page = op_client.get(response["Location"]).content.decode()
    assert "Nothing was found for this subject" in page


def test_a_request_is_found_by_the_subject_the_operator_types(
    op_client: Client, memory_a: Memory, memory_b: Memory, django_capture_on_commit_callbacks: Any
) -> None:
    from privacy.services import erasure_request_create

    with django_capture_on_commit_callbacks(execute=False):
        mine = erasure_request_create(tenant=memory_a.tenant, subject="alice")
        erasure_request_create(tenant=memory_a.tenant, subject="carol")
        theirs = erasure_request_create(tenant=memory_b.tenant, subject="bob")
    listed = op_client.get("/admin/privacy/erasurerequest/?q=alice").context["cl"].result_list
    assert [r.pk for r in listed] == [mine.pk]
    by_hash = op_client.get(f"/admin/privacy/erasurerequest/?q={mine.subject_hash}").context["cl"].result_list
    assert [r.pk for r in by_hash] == [mine.pk]
    assert list(op_client.get("/admin/privacy/erasurerequest/?q=bob").context["cl"].result_list) == []
    theirs_by_hash = f"/admin/privacy/erasurerequest/?q={theirs.subject_hash}"
    assert list(op_client.get(theirs_by_hash).context["cl"].result_list) == []

"""Feedback on a context, traces, the export of trajectories and GET /v1/stats."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from django.core.management import call_command

from procedural.models import Procedure, ProcedureOutcome
from procedural.services import procedure_create
from router.models import ContextFeedback
from semantic.models import Fact
from tenants.scope import tenant_scope
from tests.router.conftest import believe, remember

pytestmark = pytest.mark.django_db


def _procedure(tenant) -> Procedure:
    with tenant_scope(tenant):
        return procedure_create(
            tenant=tenant,
            name="printer triage",
            behaviour="Ask which tray jams before suggesting a fix.",
            trigger={"keywords": ["printer"], "description": "the printer jams"},
        )


def _context(api, **body):
    body.setdefault("subject", "alice")
    response = api.post("/v1/context", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def _ids(body):
    return [i["id"] for layer in ("procedural", "semantic", "episodic") for i in body["layers"][layer]]


@pytest.mark.isolation("context-feedback")
def test_feedback_marks_facts_used_and_feeds_the_hit_rate(tenant_a, api_a, api_b) -> None:
    remember(tenant_a, ["my printer jams on tray two", "I moved to Lisbon"])
    # Without sources: its source line of this session, worth more, would be served in its place.
    fact = believe(tenant_a, attribute="city", value="Lisbon", statement="Alice lives in Lisbon.").fact
    body = _context(api_a, query="printer Lisbon", session="s-1")
    offered = _ids(body)
    assert f"fact:{fact.id}" in offered
    # Another tenant cannot see, let alone answer, this trace.
    foreign = api_b.post(f"/v1/context/{body['trace_id']}/feedback", {"used_item_ids": []}, format="json")
    assert foreign.status_code == 404
    response = api_a.post(
        f"/v1/context/{body['trace_id']}/feedback",
        {"used_item_ids": [f"fact:{fact.id}"], "outcome": "success", "signal": 0.5},
        format="json",
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["used_count"] == 1 and data["offered_count"] == len(offered)
    assert data["hit_rate"] == pytest.approx(1 / len(offered))
    with tenant_scope(tenant_a):
        stored = Fact.objects.for_tenant(tenant_a).get(id=fact.id)
    assert stored.use_count == 1 and stored.last_used_at is not None
    stats = api_a.get("/v1/stats").json()
    assert stats["memory"]["hit_rate"]["hit_rate"] == pytest.approx(1 / len(offered))
    assert stats["memory"]["by_subject"] == [
        {"subject": "alice", "hit_rate": pytest.approx(1 / len(offered)), "feedback_count": 1}
    ]
    assert stats["memory"]["by_session"][0]["session"] == "s-1"


def test_feedback_records_procedure_outcomes(tenant_a, api_a) -> None:
    used = _procedure(tenant_a)
    remember(tenant_a, ["the printer jams again"])
    body = _context(api_a, query="my printer jams", session="s-1")
    assert [i["id"] for i in body["layers"]["procedural"]] == [f"procedure:{used.id}"]
    assert "## Procedures" in body["prompt"] and "Ask which tray jams" in body["prompt"]
    response = api_a.post(
        f"/v1/context/{body['trace_id']}/feedback",
        {"used_item_ids": [f"procedure:{used.id}"], "outcome": "failure", "signal": -1},
        format="json",
    )
    assert response.status_code == 200, response.content
    with tenant_scope(tenant_a):
        outcome = ProcedureOutcome.objects.for_tenant(tenant_a).get(procedure_id=used.id)
    assert outcome.applied is True and outcome.success is False


def test_feedback_rejects_items_that_were_not_offered(tenant_a, api_a) -> None:
    remember(tenant_a, ["my printer jams"])
    body = _context(api_a, query="printer")
    response = api_a.post(
        f"/v1/context/{body['trace_id']}/feedback", {"used_item_ids": [_ids(body)[0], "fact:nope"]}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/used_item_ids/1"
    with tenant_scope(tenant_a):
        assert not ContextFeedback.objects.for_tenant(tenant_a).exists()


@pytest.mark.parametrize(("body", "pointer"), [({"signal": 2}, "/signal"), ({"outcome": "great"}, "/outcome")])
def test_bad_feedback_names_the_field(tenant_a, api_a, body, pointer) -> None:
    trace = _context(api_a, query="anything")["trace_id"]
    response = api_a.post(f"/v1/context/{trace}/feedback", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == pointer


def test_feedback_is_given_once_per_trace_and_replays_under_an_idempotency_key(tenant_a, api_a) -> None:
    trace = _context(api_a, query="anything")["trace_id"]
    first = api_a.post(
        f"/v1/context/{trace}/feedback", {"asked_to_repeat": True}, format="json", HTTP_IDEMPOTENCY_KEY="k1"
    )
    assert first.status_code == 200
    replay = api_a.post(
        f"/v1/context/{trace}/feedback", {"asked_to_repeat": True}, format="json", HTTP_IDEMPOTENCY_KEY="k1"
    )
    assert replay.status_code == 200 and replay["Idempotent-Replayed"] == "true"
    again = api_a.post(f"/v1/context/{trace}/feedback", {"asked_to_repeat": True}, format="json")
    assert again.status_code == 409
    assert api_a.get("/v1/stats").json()["memory"]["hit_rate"]["asked_to_repeat_rate"] == 1.0


def test_feedback_on_an_unknown_trace_is_404(api_a) -> None:
    response = api_a.post(f"/v1/context/{uuid.uuid4()}/feedback", {}, format="json")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


@pytest.mark.isolation("trace-list", "trace-detail")
def test_traces_are_listed_and_shown_only_to_their_tenant(tenant_a, api_a, api_b) -> None:
    remember(tenant_a, ["my printer jams"])
    body = _context(api_a, query="printer", session="s-1")
    listed = api_a.get("/v1/traces", {"subject": "alice"}).json()
    assert [t["id"] for t in listed["results"]] == [body["trace_id"]]
    detail = api_a.get(f"/v1/traces/{body['trace_id']}").json()
    assert detail["total_tokens"] == body["tokens"]["total"]
    assert [i["id"] for i in detail["offered"]] == _ids(body)
    assert api_a.get("/v1/traces", {"subject": "bob"}).json()["results"] == []
    assert api_b.get("/v1/traces").json()["results"] == []
    assert api_b.get(f"/v1/traces/{body['trace_id']}").status_code == 404


@pytest.mark.isolation("stats")
def test_stats_count_only_the_callers_tenant(tenant_a, tenant_b, api_a, api_b) -> None:
    remember(tenant_b, ["one", "two", "three"], subject="bob")
    trace = _context(api_b, subject="bob", query="one")["trace_id"]
    api_b.post(f"/v1/context/{trace}/feedback", {"used_item_ids": []}, format="json")
    mine = api_a.get("/v1/stats").json()
    assert mine["episodic"]["episodes"] == 0
    assert mine["memory"]["hit_rate"]["feedback_count"] == 0 and mine["memory"]["by_subject"] == []
    assert mine["context"]["requests"] == 0
    theirs = api_b.get("/v1/stats").json()
    assert theirs["episodic"]["episodes"] == 3 and theirs["context"]["requests"] == 1
    assert set(theirs) >= {"memory", "consolidation_ratio", "backlogs", "growth", "procedural", "consolidation"}


def test_export_traces_writes_trajectories_as_jsonl(tenant_a, api_a) -> None:
    remember(tenant_a, ["my printer jams"])
    first = _context(api_a, query="printer")
    _context(api_a, query="anything else")
    used = _ids(first)[:1]
    api_a.post(
        f"/v1/context/{first['trace_id']}/feedback", {"used_item_ids": used, "outcome": "success"}, format="json"
    )
    out = io.StringIO()
    call_command("export_traces", "--tenant", tenant_a.slug, stdout=out, stderr=io.StringIO())
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["trace_id"] for r in rows] == [first["trace_id"], rows[1]["trace_id"]]
    assert rows[0]["state"]["query"] == "printer" and rows[0]["used_item_ids"] == used
    assert rows[0]["outcome"] == "success" and rows[1]["outcome"] is None
    assert [i["id"] for i in rows[0]["offered"]] == _ids(first)

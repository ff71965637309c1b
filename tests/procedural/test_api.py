"""/v1/procedures over HTTP: the contract, problem+json for bad input (nothing written), isolation."""

from __future__ import annotations

import pytest

from procedural.models import Procedure, ProcedureOutcome, ProcedureStatus
from tenants.scope import tenant_scope
from tests.factories.episodic import EpisodeFactory

pytestmark = pytest.mark.django_db

BODY = {
    "name": "Back off after 429",
    "description": "rate limits",
    "trigger": {
        "tools": [{"name": "billing_api", "status": [429]}],
        "keywords": ["rate limit"],
        "description": "an API answered 429 Too Many Requests",
    },
    "behaviour": "Retry with exponential backoff.",
    "steps": ["wait 1 s", "wait 2 s", "give up after 5"],
}


def _count(tenant, model=Procedure) -> int:
    with tenant_scope(tenant):
        return model.objects.for_tenant(tenant).count()


def _create(api, **overrides) -> dict:
    response = api.post("/v1/procedures", {**BODY, **overrides}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_create_and_read_a_procedure(api_a, ctx_a) -> None:
    body = _create(api_a)
    assert body["version"] == 1 and body["is_current"] and body["status"] == "active"
    assert body["source"] == "instruction" and body["created_by"] == f"api_key:{ctx_a.api_key.prefix}"
    assert body["trigger"] == {
        "tools": [{"name": "billing_api", "status": [429]}],
        "keywords": ["rate limit"],
        "description": "an API answered 429 Too Many Requests",
    }
    assert body["statistics"]["applications"] == 0 and body["confidence"] == pytest.approx(0.356, abs=1e-3)
    again = api_a.get(f"/v1/procedures/{body['id']}")
    assert again.status_code == 200 and again.json() == body


def test_create_is_idempotent_under_a_key(api_a, tenant_a) -> None:
    first = api_a.post("/v1/procedures", BODY, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    second = api_a.post("/v1/procedures", BODY, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert second["Idempotent-Replayed"] == "true" and second.json()["id"] == first.json()["id"]
    assert _count(tenant_a) == 1


@pytest.mark.parametrize(
    ("patch", "pointer"),
    [
        ({"trigger": {"keywords": ["x"], "when": "now"}}, "/trigger/when"),
        ({"trigger": {"regexes": ["(a+)+$"]}}, "/trigger/regexes/0"),
        ({"trigger": {"regexes": ["x" * 300]}}, "/trigger/regexes/0"),
        ({"trigger": {"tools": [{"name": "api", "status": "teapot!"}]}}, "/trigger/tools/0/status/0"),
        ({"trigger": {}}, "/trigger"),
        ({"behaviour": ""}, "/behaviour"),
        ({"steps": ["ok", ""]}, "/steps/1"),
        ({"status": "deprecated"}, "/status"),
        ({"colour": "blue"}, "/colour"),
    ],
)
def test_bad_procedures_are_refused_and_nothing_is_written(api_a, tenant_a, patch, pointer) -> None:
    response = api_a.post("/v1/procedures", {**BODY, **patch}, format="json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert pointer in [e["pointer"] for e in response.json()["errors"]]
    assert _count(tenant_a) == 0


def test_patch_makes_a_new_version_and_history_shows_both(api_a) -> None:
    v1 = _create(api_a)
    response = api_a.patch(
        f"/v1/procedures/{v1['id']}", {"behaviour": "Back off, with jitter.", "reason": "jitter"}, format="json"
    )
    assert response.status_code == 200
    v2 = response.json()
    assert v2["version"] == 2 and v2["id"] != v1["id"] and v2["lineage"] == v1["lineage"]
    old = api_a.get(f"/v1/procedures/{v1['id']}").json()
    assert old["is_current"] is False and old["superseded_by"] == v2["id"]
    history = api_a.get(f"/v1/procedures/{v1['id']}/history").json()
    assert [v["version"] for v in history["versions"]] == [1, 2]
    assert [e["kind"] for e in history["events"]] == ["created", "edited"]
    assert history["events"][1]["reason"] == "jitter"
    listed = api_a.get("/v1/procedures").json()["results"]
    assert [p["id"] for p in listed] == [v2["id"]]
    everything = api_a.get("/v1/procedures", {"all_versions": "true"}).json()["results"]
    assert {p["id"] for p in everything} == {v1["id"], v2["id"]}
    conflict = api_a.patch(f"/v1/procedures/{v1['id']}", {"name": "stale"}, format="json")
    assert conflict.status_code == 409 and conflict.json()["current_id"] == v2["id"]


def test_bad_patch_writes_nothing(api_a, tenant_a) -> None:
    v1 = _create(api_a)
    response = api_a.patch(f"/v1/procedures/{v1['id']}", {"trigger": {"regexes": ["(x|xx)*y"]}}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/trigger/regexes/0"
    assert _count(tenant_a) == 1


def test_delete_deprecates_and_patch_reactivates(api_a, tenant_a) -> None:
    created = _create(api_a)
    response = api_a.delete(f"/v1/procedures/{created['id']}?reason=obsolete")
    assert response.status_code == 200 and response.json()["status"] == "deprecated"
    assert api_a.delete(f"/v1/procedures/{created['id']}").status_code == 200  # idempotent
    assert _count(tenant_a) == 1  # deprecated, not deleted
    back = api_a.patch(f"/v1/procedures/{created['id']}", {"status": "active"}, format="json")
    assert back.status_code == 200 and back.json()["status"] == "active"
    kinds = [e["kind"] for e in api_a.get(f"/v1/procedures/{created['id']}/history").json()["events"]]
    assert kinds == ["created", "deprecated", "reactivated"]


def test_list_filters_and_validates(api_a) -> None:
    _create(api_a, name="a")
    _create(api_a, name="b", status="candidate", source="experience")
    names = [p["name"] for p in api_a.get("/v1/procedures", {"status": "candidate"}).json()["results"]]
    assert names == ["b"]
    assert api_a.get("/v1/procedures", {"status": "sleeping"}).status_code == 400
    assert api_a.get("/v1/procedures", {"colour": "blue"}).status_code == 400


def test_match_ranks_with_why(api_a) -> None:
    strong = _create(api_a, name="strong")
    _create(api_a, name="weak", trigger={"keywords": ["rate limit"]})
    response = api_a.post(
        "/v1/procedures/match",
        {
            "message": "we hit a rate limit",
            "tool_events": [{"kind": "tool_result", "payload": {"tool": "billing_api", "status": 429}}],
            "agent": "support-bot",
        },
        format="json",
    )
    assert response.status_code == 200
    matches = response.json()["matches"]
    assert [m["procedure"]["name"] for m in matches] == ["strong", "weak"]
    assert matches[0]["procedure"]["id"] == strong["id"]
    assert any("billing_api" in why for why in matches[0]["why"])
    assert matches[0]["score"] > matches[1]["score"] and 0 < matches[0]["confidence"] < 1


def test_match_input_is_validated(api_a) -> None:
    unknown = api_a.post("/v1/procedures/match", {"message": "x", "mood": "?"}, format="json")
    assert unknown.status_code == 400 and [e["pointer"] for e in unknown.json()["errors"]] == ["/mood"]
    bad_limit = api_a.post("/v1/procedures/match", {"message": "x", "limit": 0}, format="json")
    assert bad_limit.status_code == 400 and [e["pointer"] for e in bad_limit.json()["errors"]] == ["/limit"]


def test_match_needs_only_a_read_key(tenant_a) -> None:
    from rest_framework.test import APIClient

    from tenants.services import api_key_create

    issued = api_key_create(tenant=tenant_a, name="reader", scopes=("read",))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    assert client.post("/v1/procedures/match", {"message": "deploy"}, format="json").status_code == 200
    assert client.post("/v1/procedures", BODY, format="json").status_code == 403


def test_outcomes_over_http(api_a, tenant_a) -> None:
    created = _create(api_a)
    episode = EpisodeFactory(tenant=tenant_a, session__external_id="sess-1")
    url = f"/v1/procedures/{created['id']}/outcomes"
    first = api_a.post(url, {"applied": True, "success": True, "episode": episode.pk}, format="json")
    assert first.status_code == 201
    body = first.json()
    assert body["session"] == "sess-1" and body["procedure"]["statistics"]["successes"] == 1
    assert body["procedure"]["confidence"] > created["confidence"]
    again = api_a.post(url, {"applied": True, "success": True, "episode": episode.pk}, format="json")
    assert again.status_code == 201 and again.json()["id"] == body["id"]
    clash = api_a.post(url, {"applied": True, "success": False, "episode": episode.pk}, format="json")
    assert clash.status_code == 409
    bad = api_a.post(url, {"applied": True, "signal": 3}, format="json")
    assert bad.status_code == 400 and bad.json()["errors"][0]["pointer"] == "/signal"
    assert _count(tenant_a, ProcedureOutcome) == 1


def test_outcome_for_a_deprecated_procedure_is_refused_and_writes_nothing(api_a, tenant_a) -> None:
    created = _create(api_a)
    api_a.delete(f"/v1/procedures/{created['id']}")
    response = api_a.post(f"/v1/procedures/{created['id']}/outcomes", {"applied": True, "success": True}, format="json")
    assert response.status_code == 400
    assert response["Content-Type"] == "application/problem+json"
    assert "deprecated" in response.json()["detail"]
    assert _count(tenant_a, ProcedureOutcome) == 0
    with tenant_scope(tenant_a):
        assert Procedure.objects.for_tenant(tenant_a).get(pk=created["id"]).status == ProcedureStatus.DEPRECATED


def test_unknown_ids_are_404_problems(api_a) -> None:
    for response in (
        api_a.get("/v1/procedures/999999"),
        api_a.patch("/v1/procedures/999999", {"name": "x"}, format="json"),
        api_a.delete("/v1/procedures/999999"),
        api_a.get("/v1/procedures/999999/history"),
        api_a.post("/v1/procedures/999999/outcomes", {"applied": True}, format="json"),
        api_a.get("/v1/procedures/99999999999999999999999"),
        api_a.post("/v1/procedures/99999999999999999999999/outcomes", {"applied": True}, format="json"),
    ):
        assert response.status_code == 404 and response["Content-Type"] == "application/problem+json"


# --- isolation: another tenant's procedures are invisible through every endpoint ------------------


@pytest.mark.isolation("procedure-list")
def test_lists_show_only_the_callers_procedures(api_a, api_b) -> None:
    _create(api_a, name="a's")
    _create(api_b, name="b's")
    assert [p["name"] for p in api_a.get("/v1/procedures").json()["results"]] == ["a's"]
    assert [p["name"] for p in api_b.get("/v1/procedures", {"all_versions": "true"}).json()["results"]] == ["b's"]


@pytest.mark.isolation("procedure-detail", "procedure-history")
def test_another_tenants_procedure_is_not_found_and_unchanged(api_a, api_b, tenant_b) -> None:
    theirs = _create(api_b)
    for response in (
        api_a.get(f"/v1/procedures/{theirs['id']}"),
        api_a.get(f"/v1/procedures/{theirs['id']}/history"),
        api_a.patch(f"/v1/procedures/{theirs['id']}", {"name": "hijacked"}, format="json"),
        api_a.delete(f"/v1/procedures/{theirs['id']}"),
    ):
        assert response.status_code == 404
    after = api_b.get(f"/v1/procedures/{theirs['id']}").json()
    assert after["name"] == BODY["name"] and after["status"] == "active"
    assert _count(tenant_b) == 1


@pytest.mark.isolation("procedure-match")
def test_match_never_offers_another_tenants_procedures(api_a, api_b) -> None:
    _create(api_b)
    response = api_a.post(
        "/v1/procedures/match",
        {"message": "rate limit", "tool_events": [{"name": "billing_api", "status": 429}]},
        format="json",
    )
    assert response.status_code == 200 and response.json()["matches"] == []


@pytest.mark.isolation("procedure-outcomes")
def test_outcomes_for_another_tenants_procedure_are_404_and_write_nothing(api_a, api_b, tenant_b) -> None:
    theirs = _create(api_b)
    response = api_a.post(f"/v1/procedures/{theirs['id']}/outcomes", {"applied": True, "success": False}, format="json")
    assert response.status_code == 404
    assert _count(tenant_b, ProcedureOutcome) == 0
    assert api_b.get(f"/v1/procedures/{theirs['id']}").json()["statistics"]["applications"] == 0


@pytest.mark.isolation("procedure-outcomes")
def test_an_outcome_cannot_name_another_tenants_episode(api_a, tenant_a, tenant_b) -> None:
    mine = _create(api_a)
    foreign = EpisodeFactory(tenant=tenant_b)
    response = api_a.post(
        f"/v1/procedures/{mine['id']}/outcomes", {"applied": True, "episode": foreign.pk}, format="json"
    )
    assert response.status_code == 400 and response.json()["errors"][0]["pointer"] == "/episode"
    assert _count(tenant_a, ProcedureOutcome) == 0

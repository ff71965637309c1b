"""The /v1/facts and /v1/entities endpoints: behaviour, bad input, and isolation between tenants."""

from __future__ import annotations

import uuid

import pytest

from semantic.models import Fact, FactChange
from tenants.scope import tenant_scope
from tests.factories.semantic import SemanticEpisodeFactory

pytestmark = pytest.mark.django_db


def _post_fact(client, **overrides):
    body = {
        "subject": "user-1",
        "entity": "user-1",
        "attribute": "database",
        "value": "PostgreSQL",
        "statement": "The user's database is PostgreSQL.",
        "category": "technical_environment",
        "confidence": 0.9,
    }
    body.update(overrides)
    return client.post("/v1/facts", body, format="json")


def _count(tenant) -> int:
    with tenant_scope(tenant):
        return Fact.objects.for_tenant(tenant).count()


def test_post_answers_what_happened(api_a, ctx_a) -> None:
    created = _post_fact(api_a, valid_from="2025-01-01T00:00:00Z")
    assert created.status_code == 201, created.json()
    assert created.json()["action"] == "created"
    fact = created.json()["fact"]
    assert fact["status"] == "active" and fact["valid_from"].startswith("2025-01-01")
    confirmed = _post_fact(api_a, value="postgresql")
    assert confirmed.status_code == 200 and confirmed.json()["action"] == "confirmed"
    superseded = _post_fact(api_a, value="MySQL", statement="The user's database is MySQL.")
    assert superseded.status_code == 201
    assert superseded.json()["action"] == "superseded"
    assert superseded.json()["previous"]["id"] == fact["id"]
    assert superseded.json()["previous"]["status"] == "superseded"
    pending = _post_fact(api_a, attribute="plan", value="pro", statement="The user is on pro.", confidence=0.2)
    assert pending.json()["action"] == "pending" and pending.json()["fact"]["status"] == "pending_review"
    with tenant_scope(ctx_a.tenant):
        change = FactChange.objects.for_tenant(ctx_a.tenant).filter(kind="created").first()
    assert change is not None and change.actor_type == "api_key" and change.actor_id == ctx_a.api_key.prefix


def test_post_with_sources_shows_provenance(api_a, tenant_a) -> None:
    episode = SemanticEpisodeFactory(tenant=tenant_a)
    body = _post_fact(api_a, source_episode_ids=[episode.id]).json()
    assert body["fact"]["source_episode_ids"] == [episode.id]
    source = body["fact"]["sources"][0]
    assert source["episode_id"] == episode.id and source["session"] == episode.session.external_id


@pytest.mark.parametrize(
    ("overrides", "pointer"),
    [
        ({"category": "gossip"}, "/category"),
        ({"confidence": 1.2}, "/confidence"),
        ({"confidence": -1}, "/confidence"),
        ({"statement": ""}, "/statement"),
        ({"statement": "   "}, "/statement"),
        ({"entity": ""}, "/entity"),
        ({"source_episode_ids": [999999999]}, "/source_episode_ids/0"),
        ({"cardinality": "several"}, "/cardinality"),
        ({"valid_from": "yesterday"}, "/valid_from"),
    ],
)
def test_bad_fact_is_a_400_problem_and_writes_nothing(api_a, tenant_a, overrides, pointer) -> None:
    response = _post_fact(api_a, **overrides)
    assert response.status_code == 400, response.json()
    assert response["Content-Type"] == "application/problem+json"
    assert pointer in [e["pointer"] for e in response.json()["errors"]]
    assert _count(tenant_a) == 0


@pytest.mark.isolation("fact-list")
def test_source_episode_of_another_tenant_or_subject_is_400(api_a, tenant_a, tenant_b) -> None:
    theirs = SemanticEpisodeFactory(tenant=tenant_b)
    other_subject = SemanticEpisodeFactory(tenant=tenant_a, subject="user-9")
    for ids in ([theirs.id], [other_subject.id]):
        response = _post_fact(api_a, source_episode_ids=ids)
        assert response.status_code == 400
        assert response.json()["errors"][0]["pointer"] == "/source_episode_ids/0"
    assert _count(tenant_a) == 0


def test_post_is_idempotent(api_a, tenant_a) -> None:
    body = {
        "entity": "user-1",
        "attribute": "email",
        "value": "a@example.com",
        "statement": "The user's email is a@example.com.",
    }
    first = api_a.post("/v1/facts", body, format="json", HTTP_IDEMPOTENCY_KEY="f1")
    second = api_a.post("/v1/facts", body, format="json", HTTP_IDEMPOTENCY_KEY="f1")
    assert first.status_code == second.status_code == 201
    assert second["Idempotent-Replayed"] == "true"
    with tenant_scope(tenant_a):
        assert FactChange.objects.for_tenant(tenant_a).count() == 1


@pytest.mark.isolation("fact-list")
def test_list_filters_and_isolation(api_a, api_b) -> None:
    _post_fact(api_a, valid_from="2025-01-01T00:00:00Z")
    _post_fact(api_a, value="MySQL", statement="The user's database is MySQL.", valid_from="2025-03-01T00:00:00Z")
    _post_fact(api_a, attribute="likes", value="tea", statement="The user likes tea.", category="preferences")
    assert [f["value"] for f in api_a.get("/v1/facts", {"attribute": "database"}).json()["results"]] == ["MySQL"]
    assert len(api_a.get("/v1/facts", {"status": "any"}).json()["results"]) == 3
    assert [f["value"] for f in api_a.get("/v1/facts", {"status": "superseded"}).json()["results"]] == ["PostgreSQL"]
    then = api_a.get("/v1/facts", {"attribute": "database", "as_of": "2025-02-01T00:00:00Z"}).json()["results"]
    assert [f["value"] for f in then] == ["PostgreSQL"]
    assert [f["value"] for f in api_a.get("/v1/facts", {"category": "preferences"}).json()["results"]] == ["tea"]
    assert len(api_a.get("/v1/facts", {"entity": " USER-1 "}).json()["results"]) == 2
    bad = api_a.get("/v1/facts", {"status": "sleeping"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["pointer"] == "/status"
    assert api_b.get("/v1/facts", {"status": "any"}).json()["results"] == []


def test_list_is_cursor_paginated(api_a) -> None:
    for n in range(5):
        _post_fact(api_a, attribute=f"attr_{n}", value=f"v{n}", statement=f"Statement number {n}.")
    page = api_a.get("/v1/facts", {"limit": 2}).json()
    seen = [f["id"] for f in page["results"]]
    while page["next"]:
        page = api_a.get(page["next"]).json()
        seen += [f["id"] for f in page["results"]]
    assert len(seen) == len(set(seen)) == 5


@pytest.mark.isolation("fact-detail")
def test_detail_patch_delete_and_isolation(api_a, api_b) -> None:
    fact_id = _post_fact(api_a).json()["fact"]["id"]
    assert api_a.get(f"/v1/facts/{fact_id}").json()["value"] == "PostgreSQL"
    patched = api_a.patch(f"/v1/facts/{fact_id}", {"value": "PostgreSQL 16", "reason": "typo"}, format="json")
    assert patched.status_code == 200 and patched.json()["value"] == "PostgreSQL 16"
    assert api_a.patch(f"/v1/facts/{fact_id}", {}, format="json").status_code == 400
    assert api_a.patch(f"/v1/facts/{fact_id}", {"confidence": 2}, format="json").status_code == 400
    assert api_a.patch(f"/v1/facts/{fact_id}", {"category": "x"}, format="json").json()["errors"][0]["pointer"] == (
        "/category"
    )
    # Another tenant: 404 for read, edit and delete, and nothing changes.
    assert api_b.get(f"/v1/facts/{fact_id}").status_code == 404
    assert api_b.patch(f"/v1/facts/{fact_id}", {"value": "x"}, format="json").status_code == 404
    assert api_b.delete(f"/v1/facts/{fact_id}").status_code == 404
    assert api_a.get(f"/v1/facts/{fact_id}").json()["status"] == "active"
    deleted = api_a.delete(f"/v1/facts/{fact_id}?reason=wrong")
    assert deleted.status_code == 200 and deleted.json()["status"] == "retracted"
    assert api_a.get(f"/v1/facts/{fact_id}").json()["status"] == "retracted"
    assert api_a.get(f"/v1/facts/{uuid.uuid4()}").status_code == 404


@pytest.mark.isolation("fact-confirm")
def test_confirm_and_isolation(api_a, api_b) -> None:
    fact = _post_fact(api_a, confidence=0.6).json()["fact"]
    assert api_b.post(f"/v1/facts/{fact['id']}/confirm").status_code == 404
    confirmed = api_a.post(f"/v1/facts/{fact['id']}/confirm")
    assert confirmed.status_code == 200
    assert confirmed.json()["confidence"] == pytest.approx(0.8)
    api_a.delete(f"/v1/facts/{fact['id']}")
    assert api_a.post(f"/v1/facts/{fact['id']}/confirm").status_code == 409


@pytest.mark.isolation("fact-history")
def test_history_and_isolation(api_a, api_b) -> None:
    old = _post_fact(api_a, valid_from="2025-01-01T00:00:00Z").json()["fact"]
    new = _post_fact(api_a, value="MySQL", statement="It is MySQL.").json()["fact"]
    history = api_a.get(f"/v1/facts/{old['id']}/history").json()
    assert [c["kind"] for c in history["changes"]] == ["created", "superseded"]
    change = history["changes"][1]
    assert (change["old_value"], change["new_value"], change["related_fact"]) == ("PostgreSQL", "MySQL", new["id"])
    assert api_b.get(f"/v1/facts/{old['id']}/history").status_code == 404


@pytest.mark.isolation("fact-review")
def test_review_needs_admin_scope_and_is_isolated(api_a, api_b, tenant_a) -> None:
    from rest_framework.test import APIClient

    from tenants.services import api_key_create

    pending = _post_fact(api_a, confidence=0.1).json()["fact"]
    writer = APIClient()
    writer.credentials(
        HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=tenant_a, name='w', scopes=['read', 'write']).raw}"
    )
    assert writer.post(f"/v1/facts/{pending['id']}/review", {"approve": True}, format="json").status_code == 403
    assert api_b.post(f"/v1/facts/{pending['id']}/review", {"approve": True}, format="json").status_code == 404
    approved = api_a.post(f"/v1/facts/{pending['id']}/review", {"approve": True, "value": "Postgres"}, format="json")
    assert approved.status_code == 200
    assert (approved.json()["status"], approved.json()["value"]) == ("active", "Postgres")
    again = api_a.post(f"/v1/facts/{pending['id']}/review", {"approve": False}, format="json")
    assert again.status_code == 409


@pytest.mark.isolation("fact-change-revert")
def test_revert_and_isolation(api_a, api_b, tenant_a) -> None:
    old = _post_fact(api_a, valid_from="2025-01-01T00:00:00Z").json()["fact"]
    _post_fact(api_a, value="MySQL", statement="It is MySQL.")
    change_id = api_a.get(f"/v1/facts/{old['id']}/history").json()["changes"][1]["id"]
    assert api_b.post(f"/v1/fact-changes/{change_id}/revert", {}, format="json").status_code == 404
    reverted = api_a.post(f"/v1/fact-changes/{change_id}/revert", {"reason": "bad extraction"}, format="json")
    assert reverted.status_code == 201, reverted.json()
    body = reverted.json()
    assert body["action"] == "superseded" and body["fact"]["value"] == "PostgreSQL"
    assert body["previous"]["value"] == "MySQL"
    active = api_a.get("/v1/facts", {"attribute": "database"}).json()["results"]
    assert [f["value"] for f in active] == ["PostgreSQL"]


@pytest.mark.isolation("fact-search")
def test_search_ranks_with_score_parts_and_isolation(api_a, api_b) -> None:
    _post_fact(api_a)
    _post_fact(
        api_a, attribute="likes", value="green tea", statement="The user likes green tea.", category="preferences"
    )
    _post_fact(
        api_b, attribute="likes", value="green tea", statement="The user likes green tea.", category="preferences"
    )
    response = api_a.post("/v1/facts/search", {"query": "what tea does the user like", "k": 5}, format="json")
    assert response.status_code == 200
    results = response.json()["results"]
    assert results[0]["fact"]["value"] == "green tea"
    assert set(results[0]["score_parts"]) == {"vector", "text", "confidence", "recency"}
    assert results[0]["score"] >= results[-1]["score"]
    filtered = api_a.post("/v1/facts/search", {"query": "tea", "category": "technical_environment"}, format="json")
    assert [r["fact"]["value"] for r in filtered.json()["results"]] == ["PostgreSQL"]
    strict = api_a.post("/v1/facts/search", {"query": "tea", "min_score": 0.99}, format="json")
    assert strict.json()["results"] == []
    other = api_b.post("/v1/facts/search", {"query": "database PostgreSQL", "k": 10}, format="json").json()["results"]
    assert [r["fact"]["value"] for r in other] == ["green tea"]


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"query": ""}, "/query"),
        ({"query": "x", "k": 0}, "/k"),
        ({"query": "x", "k": 1000}, "/k"),
        ({"query": "x", "min_score": 2}, "/min_score"),
        ({"query": "x", "category": "gossip"}, "/category"),
        ({"query": "x", "as_of": "soon"}, "/as_of"),
    ],
)
def test_bad_search_is_a_400_problem(api_a, body, pointer) -> None:
    response = api_a.post("/v1/facts/search", body, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == pointer


@pytest.mark.isolation("entity-graph")
def test_entity_graph_traverses_relations_and_is_isolated(api_a, api_b) -> None:
    _post_fact(
        api_a,
        subject="",
        entity="postgres",
        attribute="runs_on",
        value="AWS",
        statement="Postgres runs on AWS.",
        object_entity="aws",
    )
    _post_fact(
        api_a, subject="", entity="acme", attribute="database", value="Postgres", statement="Acme uses Postgres."
    )
    _post_fact(
        api_a, subject="", entity="acme", attribute="plan", value="enterprise", statement="Acme is on enterprise."
    )
    one = api_a.get("/v1/entities/acme/graph", {"depth": 1}).json()
    assert {n["entity"] for n in one["nodes"]} == {"acme", "postgres"}
    assert len(one["facts"]) == 2
    two = api_a.get("/v1/entities/Acme/graph").json()
    assert two["depth"] == 2
    assert {(e["source"], e["attribute"], e["target"]) for e in two["edges"]} == {
        ("acme", "database", "postgres"),
        ("postgres", "runs_on", "aws"),
    }
    assert {n["entity"]: n["depth"] for n in two["nodes"]} == {"acme": 0, "postgres": 1, "aws": 2}
    assert api_a.get("/v1/entities/acme/graph", {"depth": 0}).status_code == 400
    assert api_a.get("/v1/entities/acme/graph", {"depth": 9}).json()["depth"] == 3
    theirs = api_b.get("/v1/entities/acme/graph").json()
    assert theirs["facts"] == [] and theirs["edges"] == [] and [n["entity"] for n in theirs["nodes"]] == ["acme"]


def test_a_corrected_approval_lists_the_edit_before_the_approval(api_a) -> None:
    pending = _post_fact(api_a, confidence=0.1).json()["fact"]
    approved = api_a.post(f"/v1/facts/{pending['id']}/review", {"approve": True, "value": "Postgres"}, format="json")
    assert approved.status_code == 200
    changes = api_a.get(f"/v1/facts/{pending['id']}/history").json()["changes"]
    kinds = [c["kind"] for c in changes]
    assert kinds.index("edited") < kinds.index("review_approved"), kinds
    times = [c["created_at"] for c in changes]
    assert times == sorted(times)

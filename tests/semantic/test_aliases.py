"""Entity aliases through the API: operators set them, facts merge under the canonical name, search by
any name finds the entity's facts, learned aliases stay with their subject, and tenants stay apart."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from episodic.aliases import aliases_for, entity_alias_learn
from semantic.selectors import fact_search_rows
from tenants.scope import tenant_scope
from tenants.services import api_key_create

pytestmark = pytest.mark.django_db


def _fact(client, entity: str, attribute: str, value: str, statement: str, **extra):
    body = {"subject": "", "entity": entity, "attribute": attribute, "value": value, "statement": statement}
    response = client.post("/v1/facts", {**body, **extra}, format="json")
    assert response.status_code in (200, 201), response.json()
    return response.json()


def _alias(client, alias: str, entity: str):
    return client.post("/v1/entities/aliases", {"alias": alias, "entity": entity}, format="json")


def test_a_fact_about_mel_merges_with_the_same_fact_about_melanie(api_a) -> None:
    created = _alias(api_a, "Mel", "Melanie")
    assert created.status_code == 201, created.json()
    assert created.json()["alias"] | {"id": 0, "created_at": "", "updated_at": "", "created_by": ""} == {
        "id": 0,
        "alias": "mel",
        "entity": "melanie",
        "source": "operator",
        "subject": "",
        "source_episode_id": None,
        "created_by": "",
        "created_at": "",
        "updated_at": "",
    }
    first = _fact(api_a, "Melanie", "city", "Paris", "Melanie lives in Paris.")
    second = _fact(api_a, "Mel", "city", "Paris", "Mel lives in Paris.")
    assert second["action"] == "confirmed" and second["fact"]["id"] == first["fact"]["id"]
    moved = _fact(api_a, "mel", "city", "Lyon", "Mel moved to Lyon.")
    assert moved["action"] == "superseded" and moved["fact"]["entity"] == "melanie"
    assert moved["previous"]["id"] == first["fact"]["id"]


def test_setting_an_alias_merges_the_facts_already_filed_under_it(api_a) -> None:
    melanie = _fact(api_a, "Melanie", "city", "Paris", "Melanie lives in Paris.", valid_from="2025-01-01T00:00:00Z")
    mel_city = _fact(api_a, "Mel", "city", "Paris", "Mel lives in Paris.", valid_from="2025-02-01T00:00:00Z")
    mel_pet = _fact(api_a, "Mel", "pets", "a dog named Rex", "Mel has a dog named Rex.")
    response = _alias(api_a, "mel", "melanie")
    assert response.status_code == 201 and response.json()["facts_moved"] == 2

    facts = api_a.get("/v1/facts", {"entity": "Melanie"}).json()["results"]
    assert sorted((f["attribute"], f["value"]) for f in facts) == [("city", "Paris"), ("pets", "a dog named Rex")]
    city = next(f for f in facts if f["attribute"] == "city")
    assert city["id"] == melanie["fact"]["id"] and city["confirmation_count"] == 2
    assert api_a.get("/v1/facts", {"entity": "Mel"}).json()["results"] == facts
    # The rows filed under the alias are kept, retracted, with the fact they went into.
    for old in (mel_city, mel_pet):
        history = api_a.get(f"/v1/facts/{old['fact']['id']}/history").json()["changes"]
        assert history[-1]["kind"] == "merged" and history[-1]["new_status"] == "retracted"
        assert history[-1]["related_fact"] in {f["id"] for f in facts}
    again = _alias(api_a, "mel", "melanie")
    assert again.status_code == 200 and again.json() | {"alias": None} == {
        "action": "unchanged",
        "alias": None,
        "facts_moved": 0,
    }


def test_a_search_naming_an_alias_finds_the_entitys_facts(api_a) -> None:
    _alias(api_a, "Mel", "Melanie")
    _fact(api_a, "Melanie", "hobbies", "painting", "Melanie paints sunsets.", confidence=0.6)
    _fact(api_a, "Caroline", "hobbies", "hiking", "Caroline goes hiking on weekends.", confidence=0.95)
    _fact(api_a, "acme", "plan", "enterprise", "Acme is on the enterprise plan.", confidence=0.95)
    found = api_a.post("/v1/facts/search", {"query": "Mel", "k": 1}, format="json").json()["results"]
    assert [r["fact"]["statement"] for r in found] == ["Melanie paints sunsets."]
    filtered = api_a.post("/v1/facts/search", {"query": "hobbies", "entity": "Mel"}, format="json").json()
    assert [r["fact"]["entity"] for r in filtered["results"]] == ["melanie"]
    graph = api_a.get("/v1/entities/Mel/graph").json()
    assert graph["entity"] == "melanie" and [f["value"] for f in graph["facts"]] == ["painting"]


def test_the_context_offers_facts_about_an_entity_the_query_names(api_a) -> None:
    _fact(api_a, "u1", "city", "Lisbon", "u1 lives in Lisbon.", subject="u1")
    _fact(api_a, "Acme", "plan", "enterprise", "Acme is on the enterprise plan.")
    _fact(api_a, "Mel", "role", "support lead", "Mel is the support lead.", subject="u2")
    _alias(api_a, "Mel", "Melanie")
    context = api_a.post(
        "/v1/context", {"subject": "u1", "query": "Which plan is Acme on, and who is Mel?"}, format="json"
    ).json()
    said = [item["text"] for item in context["layers"]["semantic"]]
    assert any("Acme is on the enterprise plan." in text for text in said), said
    # Another subject's memory stays closed, even about an entity the query names.
    assert not any("support lead" in text for text in said), said


def test_an_operators_alias_beats_a_learned_one(api_a, tenant_a) -> None:
    with tenant_scope(tenant_a):
        assert entity_alias_learn(tenant=tenant_a, alias="Mel", entity="Melanie", subject="conv-1") is not None
    mine = _fact(api_a, "Mel", "likes", "pottery", "Mel likes pottery.", subject="conv-1")
    assert mine["fact"]["entity"] == "melanie"
    # Learned aliases are the subject's: another subject's "Mel" is not Melanie.
    theirs = _fact(api_a, "Mel", "likes", "chess", "Mel likes chess.", subject="conv-2")
    assert theirs["fact"]["entity"] == "mel"

    assert _alias(api_a, "Mel", "Melvin").status_code == 201
    again = _fact(api_a, "Mel", "likes", "jazz", "Mel likes jazz.", subject="conv-1")
    assert again["fact"]["entity"] == "melvin"
    listed = api_a.get("/v1/entities/aliases", {"alias": "MEL"}).json()["results"]
    assert {(a["entity"], a["source"], a["subject"]) for a in listed} == {
        ("melvin", "operator", ""),
        ("melanie", "learned", "conv-1"),
    }
    with tenant_scope(tenant_a):
        assert aliases_for(tenant=tenant_a, names=["mel"], subject="conv-1").canonical("Mel") == "melvin"
        # The operator's alias being removed, the learned one holds again for its subject.
        operator_id = next(a["id"] for a in listed if a["source"] == "operator")
    assert api_a.delete(f"/v1/entities/aliases/{operator_id}").status_code == 200
    with tenant_scope(tenant_a):
        assert aliases_for(tenant=tenant_a, names=["mel"], subject="conv-1").canonical("Mel") == "melanie"
        assert aliases_for(tenant=tenant_a, names=["mel"], subject="conv-2").canonical("Mel") == "mel"


def test_aliases_stay_one_step_deep(api_a) -> None:
    assert _alias(api_a, "Mel", "Melanie").status_code == 201
    chained = _alias(api_a, "Melly", "Mel")
    assert chained.status_code == 409 and chained["Content-Type"] == "application/problem+json"
    # Melanie becoming an alias in turn: what pointed at her points at her new name.
    assert _alias(api_a, "Melanie", "Melanie Jones").status_code == 201
    entities = {a["alias"]: a["entity"] for a in api_a.get("/v1/entities/aliases").json()["results"]}
    assert entities == {"mel": "melanie jones", "melanie": "melanie jones"}


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"alias": "Mel", "entity": " mel "}, "/entity"),
        ({"alias": "   ", "entity": "Melanie"}, "/alias"),
        ({"alias": "Mel"}, "/entity"),
        ({"alias": "x" * 300, "entity": "Melanie"}, "/alias"),
    ],
)
def test_a_bad_alias_is_a_400_problem_and_writes_nothing(api_a, body, pointer) -> None:
    response = api_a.post("/v1/entities/aliases", body, format="json")
    assert response.status_code == 400, response.json()
    assert response["Content-Type"] == "application/problem+json"
    assert pointer in [e["pointer"] for e in response.json()["errors"]]
    assert api_a.get("/v1/entities/aliases").json()["results"] == []


def test_setting_an_alias_needs_an_admin_key_and_reading_one_a_read_key(api_a, tenant_a) -> None:
    _alias(api_a, "Mel", "Melanie")
    alias_id = api_a.get("/v1/entities/aliases").json()["results"][0]["id"]
    for scopes, read, write in ((["read"], 200, 403), (["read", "write"], 200, 403)):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=tenant_a, name='k', scopes=scopes).raw}")
        assert client.get("/v1/entities/aliases").status_code == read
        assert _alias(client, "Jo", "Joanna").status_code == write
        assert client.delete(f"/v1/entities/aliases/{alias_id}").status_code == write


@pytest.mark.isolation("entity-alias-list", "entity-alias-detail")
def test_another_tenants_aliases_are_invisible_and_do_not_apply(api_a, api_b) -> None:
    created = _alias(api_a, "Mel", "Melanie").json()["alias"]
    assert api_b.get("/v1/entities/aliases").json()["results"] == []
    gone = api_b.delete(f"/v1/entities/aliases/{created['id']}")
    assert gone.status_code == 404 and gone["Content-Type"] == "application/problem+json"
    assert api_a.delete("/v1/entities/aliases/99999999999999999999").status_code == 404
    theirs = _fact(api_b, "Mel", "city", "Porto", "Mel lives in Porto.")
    assert theirs["fact"]["entity"] == "mel"
    # Tenant B's own alias of the same name is its own.
    assert _alias(api_b, "Mel", "Melvin").json()["facts_moved"] == 1
    assert [a["entity"] for a in api_a.get("/v1/entities/aliases").json()["results"]] == ["melanie"]
    removed = api_a.delete(f"/v1/entities/aliases/{created['id']}")
    assert removed.status_code == 200 and removed.json()["alias"] == "mel"
    assert [a["entity"] for a in api_b.get("/v1/entities/aliases").json()["results"]] == ["melvin"]


def test_setting_an_alias_is_idempotent(api_a) -> None:
    body = {"alias": "Mel", "entity": "Melanie"}
    first = api_a.post("/v1/entities/aliases", body, format="json", HTTP_IDEMPOTENCY_KEY="a1")
    second = api_a.post("/v1/entities/aliases", body, format="json", HTTP_IDEMPOTENCY_KEY="a1")
    assert first.status_code == second.status_code == 201
    assert second["Idempotent-Replayed"] == "true"


def test_a_tenant_without_aliases_pays_no_lookup(api_a, tenant_a, django_assert_max_num_queries) -> None:
    _fact(api_a, "Caroline", "hobbies", "hiking", "Caroline goes hiking.", subject="u1")
    tenant_a.refresh_from_db()
    with tenant_scope(tenant_a):
        # The scan settings and the ranked candidates, as for a query that names nothing.
        with django_assert_max_num_queries(2):
            assert fact_search_rows(tenant=tenant_a, query="What does Caroline like?", subject="u1")
    created = _alias(api_a, "Caro", "Caroline").json()["alias"]
    tenant_a.refresh_from_db()
    assert tenant_a.has_entity_aliases
    with tenant_scope(tenant_a), django_assert_max_num_queries(3):
        assert fact_search_rows(tenant=tenant_a, query="What does Caro like?", subject="u1")
    api_a.delete(f"/v1/entities/aliases/{created['id']}")
    tenant_a.refresh_from_db()
    assert not tenant_a.has_entity_aliases

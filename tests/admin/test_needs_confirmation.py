"""GET /v1/facts?needs_confirmation=true: facts unconfirmed past their category's horizon, or pending."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from semantic.models import Fact
from tenants.scope import tenant_scope
from tenants.services import api_key_create

pytestmark = pytest.mark.django_db


def _write(api, attribute: str, value: str, category: str) -> str:
    body = {"subject": "u1", "entity": "u1", "attribute": attribute, "value": value, "category": category}
    response = api.post("/v1/facts", {**body, "statement": f"u1 {attribute} {value}."}, format="json")
    assert response.status_code in (200, 201), response.json()
    return str(response.json()["fact"]["id"])


def _age(tenant, fact_id: str, days: int) -> None:
    with tenant_scope(tenant):
        Fact.objects.for_tenant(tenant).filter(pk=fact_id).update(
            last_confirmed_at=timezone.now() - timedelta(days=days)
        )


def _listed(api) -> set[str]:
    response = api.get("/v1/facts", {"needs_confirmation": "true"})
    assert response.status_code == 200
    return {f["id"] for f in response.json()["results"]}


def test_facts_past_their_categorys_horizon_are_listed_until_confirmed(api_a, ctx_a) -> None:
    issue = _write(api_a, "known_issues", "nightly export fails", "known_issues")
    email = _write(api_a, "email", "a@b.example", "contact_info")
    _age(ctx_a.tenant, issue, 40)  # known_issues: 30 days
    _age(ctx_a.tenant, email, 40)  # contact_info: 365 days
    assert _listed(api_a) == {issue}
    assert api_a.post(f"/v1/facts/{issue}/confirm").status_code == 200
    assert _listed(api_a) == set()


@pytest.mark.isolation("GET /v1/facts?needs_confirmation=true")
def test_another_tenants_stale_facts_are_not_listed(api_a, api_b, ctx_a) -> None:
    issue = _write(api_a, "known_issues", "nightly export fails", "known_issues")
    _age(ctx_a.tenant, issue, 40)
    assert _listed(api_a) == {issue}
    assert _listed(api_b) == set()


def test_the_admin_lists_facts_that_need_confirmation(op_client, memory_a) -> None:
    response = op_client.get("/admin/semantic/fact/", {"needs_confirmation": "yes"})
    assert response.status_code == 200
    listed = {str(fact.pk) for fact in response.context["cl"].result_list}
    assert memory_a.pending_fact is not None and memory_a.new_fact is not None
    assert str(memory_a.pending_fact.pk) in listed and str(memory_a.new_fact.pk) not in listed


def _writer(tenant) -> APIClient:
    """An agent's key (read, write): the verification loop runs without admin scope."""
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=tenant, name='agent', scopes=['read', 'write']).raw}"
    )
    return client


def _post(api, value: str, confidence: float, valid_from: str) -> dict:
    body = {
        "subject": "u1",
        "entity": "u1",
        "attribute": "database",
        "value": value,
        "statement": f"u1's database is {value}.",
        "category": "technical_environment",
        "confidence": confidence,
        "valid_from": valid_from,
    }
    response = api.post("/v1/facts", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def _history(api, fact_id: str) -> list[dict]:
    return api.get(f"/v1/facts/{fact_id}/history").json()["changes"]


@pytest.mark.isolation("POST /v1/facts/{id}/confirm of a pending fact")
def test_confirming_a_pending_value_accepts_it_and_the_newer_value_wins(api_a, api_b, ctx_a) -> None:
    old = _post(api_a, "PostgreSQL 16", 0.9, "2025-01-01T00:00:00Z")["fact"]
    pending = _post(api_a, "PostgreSQL 17", 0.3, "2025-03-01T00:00:00Z")
    assert pending["action"] == "pending"
    pending_id = pending["fact"]["id"]
    assert _listed(api_a) == {pending_id}

    # Another tenant cannot confirm it, and nothing changes.
    assert api_b.post(f"/v1/facts/{pending_id}/confirm").status_code == 404
    assert _listed(api_a) == {pending_id}

    confirmed = _writer(ctx_a.tenant).post(f"/v1/facts/{pending_id}/confirm")
    assert confirmed.status_code == 200, confirmed.json()
    assert confirmed.json()["status"] == "active"
    assert confirmed.json()["confidence"] >= 0.5
    assert _listed(api_a) == set()
    held = api_a.get("/v1/facts", {"attribute": "database"}).json()["results"]
    assert [f["value"] for f in held] == ["PostgreSQL 17"]

    accepted = _history(api_a, pending_id)
    assert [c["kind"] for c in accepted] == ["created", "confirmed"]
    assert (accepted[1]["old_status"], accepted[1]["new_status"]) == ("pending_review", "active")
    closed = api_a.get(f"/v1/facts/{old['id']}").json()
    assert (closed["status"], closed["superseded_by"]) == ("superseded", pending_id)
    assert closed["valid_to"].startswith("2025-03-01")
    superseded = _history(api_a, old["id"])
    assert [c["kind"] for c in superseded] == ["created", "superseded"]
    assert superseded[1]["related_fact"] == pending_id
    # Confirming it again is an ordinary confirmation of an active fact.
    assert api_a.post(f"/v1/facts/{pending_id}/confirm").json()["status"] == "active"


def test_correcting_a_pending_fact_accepts_the_correction(api_a, ctx_a) -> None:
    old = _post(api_a, "PostgreSQL 16", 0.9, "2025-01-01T00:00:00Z")["fact"]
    pending_id = _post(api_a, "PostgreSQL 71", 0.3, "2025-03-01T00:00:00Z")["fact"]["id"]
    corrected = _writer(ctx_a.tenant).patch(
        f"/v1/facts/{pending_id}",
        {"value": "PostgreSQL 17", "statement": "u1's database is PostgreSQL 17."},
        format="json",
    )
    assert corrected.status_code == 200, corrected.json()
    assert (corrected.json()["status"], corrected.json()["value"]) == ("active", "PostgreSQL 17")
    assert _listed(api_a) == set()
    assert api_a.get(f"/v1/facts/{old['id']}").json()["status"] == "superseded"
    changes = _history(api_a, pending_id)
    assert [c["kind"] for c in changes] == ["created", "edited", "confirmed"]
    assert (changes[1]["old_value"], changes[1]["new_value"]) == ("PostgreSQL 71", "PostgreSQL 17")
    assert (changes[2]["old_status"], changes[2]["new_status"]) == ("pending_review", "active")


def test_correcting_a_stale_fact_clears_it_but_a_confidence_change_does_not(api_a, ctx_a) -> None:
    issue = _write(api_a, "known_issues", "nightly export fails", "known_issues")
    _age(ctx_a.tenant, issue, 40)
    assert api_a.patch(f"/v1/facts/{issue}", {"confidence": 0.7}, format="json").status_code == 200
    assert _listed(api_a) == {issue}
    corrected = api_a.patch(f"/v1/facts/{issue}", {"value": "nightly export fails on Sundays"}, format="json")
    assert corrected.status_code == 200
    assert _listed(api_a) == set()


@pytest.mark.isolation("PATCH /v1/facts/{id} of a pending fact")
def test_another_tenant_cannot_correct_a_pending_fact(api_a, api_b) -> None:
    pending_id = _post(api_a, "PostgreSQL 17", 0.3, "2025-03-01T00:00:00Z")["fact"]["id"]
    assert api_b.patch(f"/v1/facts/{pending_id}", {"value": "MySQL"}, format="json").status_code == 404
    assert api_a.get(f"/v1/facts/{pending_id}").json()["status"] == "pending_review"

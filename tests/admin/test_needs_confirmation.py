"""GET /v1/facts?needs_confirmation=true: facts unconfirmed past their category's horizon, or pending."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from semantic.models import Fact
from tenants.scope import tenant_scope

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

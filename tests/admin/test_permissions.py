"""Staff of tenant A cannot see or open tenant B's objects, neither in the admin nor in the dashboard,
whatever URL they type; superusers see every tenant; staff without a tenant see nothing."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tenants.scope import tenant_scope
from tests.factories.admin import Memory, make_operator, page_body

pytestmark = pytest.mark.django_db


def _b_objects(memory_b: Memory) -> dict[str, Any]:
    return {
        "semantic/fact": memory_b.old_fact.id,
        "semantic/factchange": memory_b.supersession_id,
        "episodic/episode": memory_b.episodes[0].pk,
        "episodic/session": memory_b.sessions[0].pk,
        "router/contexttrace": memory_b.traces[0].pk,
        "consolidation/consolidationrun": _run_id(memory_b),
        "privacy/erasurerequest": _erasure_id(memory_b),
        "procedural/procedure": _procedure_id(memory_b),
    }


def _erasure_id(memory: Memory) -> Any:
    from privacy.services import erasure_request_create

    # Filed but not carried out: no commit happens inside the test transaction.
    return erasure_request_create(tenant=memory.tenant, subject="someone-else").pk


def _procedure_id(memory: Memory) -> int:
    from procedural.services import procedure_create

    with tenant_scope(memory.tenant):
        return procedure_create(
            tenant=memory.tenant, name="bob-rule", behaviour="Berlin", trigger={"keywords": ["bob"]}
        ).pk


def _run_id(memory: Memory) -> int:
    from consolidation.models import ConsolidationRun

    with tenant_scope(memory.tenant):
        return ConsolidationRun.objects.values_list("id", flat=True).get()


@pytest.mark.parametrize(
    "model",
    [
        "semantic/fact",
        "semantic/factchange",
        "episodic/episode",
        "episodic/session",
        "router/contexttrace",
        "consolidation/consolidationrun",
        "privacy/erasurerequest",
        "procedural/procedure",
    ],
)
def test_staff_of_a_cannot_open_bs_object_by_url(
    op_client: Client, memory_a: Memory, memory_b: Memory, model: str
) -> None:
    pk = _b_objects(memory_b)[model]
    response = op_client.get(f"/admin/{model}/{pk}/change/", follow=True)
    # Django's admin answers a missing object with a redirect to the index and a message.
    assert response.redirect_chain[-1][0] == "/admin/"
    assert any("doesn’t exist" in str(m) for m in response.context["messages"])
    body = page_body(response)
    assert "bob" not in body and "Berlin" not in body


@pytest.fixture
def rules_and_erasures(memory_a: Memory, memory_b: Memory) -> None:
    from privacy.services import erasure_request_create
    from procedural.services import procedure_create

    for memory, name in ((memory_a, "alice"), (memory_b, "bob")):
        erasure_request_create(tenant=memory.tenant, subject=f"{name}-x", requested_by=f"desk-of-{name}")
        with tenant_scope(memory.tenant):
            procedure_create(tenant=memory.tenant, name=f"{name}-rule", behaviour="b", trigger={"keywords": ["k"]})


@pytest.mark.parametrize(
    "url",
    [
        "/admin/semantic/fact/",
        "/admin/semantic/factchange/",
        "/admin/semantic/fact/review/",
        "/admin/episodic/episode/",
        "/admin/episodic/session/",
        "/admin/router/contexttrace/",
        "/admin/router/contextfeedback/",
        "/admin/consolidation/consolidationrun/",
        "/admin/privacy/erasurerequest/",
        "/admin/procedural/procedure/",
    ],
)
def test_staff_of_a_lists_only_as_rows(op_client: Client, rules_and_erasures: None, url: str) -> None:
    body = page_body(op_client.get(url))
    assert "alice" in body
    assert "bob" not in body and "b-conv-" not in body


def test_dashboard_of_another_tenant_is_not_found(op_client: Client, memory_a: Memory, memory_b: Memory) -> None:
    b = memory_b.tenant.slug
    assert op_client.get(f"/dashboard/{b}/").status_code == 404
    assert op_client.get(f"/dashboard/{b}/subjects/bob/").status_code == 404
    # B's subject looked up through A's dashboard: A holds no memory of it.
    assert op_client.get(f"/dashboard/{memory_a.tenant.slug}/subjects/bob/").status_code == 404
    assert op_client.get(f"/dashboard/{memory_a.tenant.slug}/subjects/alice/").status_code == 200


def test_single_tenant_operator_goes_straight_to_their_dashboard(op_client: Client, memory_a: Memory) -> None:
    response = op_client.get("/dashboard/")
    assert response.status_code == 302
    assert response["Location"] == f"/dashboard/{memory_a.tenant.slug}/"


def test_dashboard_needs_a_staff_login(client: Client, memory_a: Memory) -> None:
    url = f"/dashboard/{memory_a.tenant.slug}/"
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    get_user_model().objects.create_user("customer", password="pw")
    client.login(username="customer", password="pw")
    response = client.get(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_staff_without_a_tenant_sees_no_dashboard(client: Client, memory_a: Memory) -> None:
    client.force_login(make_operator("op-none"))
    assert "not an operator of any tenant" in client.get("/dashboard/").content.decode()
    assert client.get(f"/dashboard/{memory_a.tenant.slug}/").status_code == 404
    assert "alice" not in client.get("/admin/semantic/fact/").content.decode()


def test_operator_of_two_tenants_chooses_and_sees_both(client: Client, memory_a: Memory, memory_b: Memory) -> None:
    client.force_login(make_operator("op-ab", memory_a.tenant, memory_b.tenant))
    body = client.get("/dashboard/").content.decode()
    assert memory_a.tenant.slug in body and memory_b.tenant.slug in body
    assert client.get(f"/dashboard/{memory_b.tenant.slug}/subjects/bob/").status_code == 200
    facts = client.get("/admin/semantic/fact/").content.decode()
    assert "alice" in facts and "bob" in facts


def test_superuser_sees_every_tenant(client: Client, memory_a: Memory, memory_b: Memory) -> None:
    client.force_login(get_user_model().objects.create_superuser("root", "root@localhost", "pw"))
    body = client.get("/admin/semantic/factchange/").content.decode().replace("<wbr>", "")  # wrap points
    assert "alice.city" in body and "bob.city" in body
    assert client.get(f"/dashboard/{memory_b.tenant.slug}/").status_code == 200

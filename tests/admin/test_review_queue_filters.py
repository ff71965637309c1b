"""The review queue filtered by tenant and subject, searched, newest first by default: a superuser
no longer pages through every tenant's facts oldest first, and an operator's filters never reach
another tenant's rows."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from tests.admin.test_review_and_audit import _pending
from tests.factories.admin import Memory, make_operator

pytestmark = pytest.mark.django_db

REVIEW = "/admin/semantic/fact/review/"


def _shown(client: Client, query: str = "") -> list[str]:
    response = client.get(f"{REVIEW}{query}")
    assert response.status_code == 200
    return [str(fact.id) for fact, _sources in response.context["items"]]


def test_subject_filter_and_search_narrow_the_queue(op_client: Client, memory_a: Memory) -> None:
    tenant = memory_a.tenant
    tea = _pending(tenant, "carol", "drink", "green tea")
    coffee = _pending(tenant, "dave", "drink", "black coffee")
    assert _shown(op_client, "?subject=carol") == [str(tea.id)]
    assert _shown(op_client, "?q=coffee") == [str(coffee.id)]  # words of the statement
    assert _shown(op_client, "?q=dave") == [str(coffee.id)]  # an exact subject or entity
    assert _shown(op_client, "?q=coffee&subject=carol") == []
    body = op_client.get(f"{REVIEW}?subject=nobody").content.decode()
    assert "No fact matches these filters." in body


def test_newest_first_by_default_and_the_order_can_be_chosen(op_client: Client, memory_a: Memory) -> None:
    tenant = memory_a.tenant
    first = _pending(tenant, "alice", "hobby", "chess")
    second = _pending(tenant, "alice", "pet", "cat")
    newest = _shown(op_client)
    assert newest[:2] == [str(second.id), str(first.id)]
    assert newest[-1] == str(memory_a.pending_fact.id)
    assert _shown(op_client, "?order=oldest")[0] == str(memory_a.pending_fact.id)
    assert _shown(op_client, "?order=confidence")  # lowest confidence first; an unknown order is the default
    assert _shown(op_client, "?order=nonsense") == newest


def test_paging_keeps_the_filters(op_client: Client, memory_a: Memory) -> None:
    for i in range(30):
        _pending(memory_a.tenant, "carol", f"colour_{i}", f"blue {i}")
    body = op_client.get(f"{REVIEW}?subject=carol&order=oldest").content.decode()
    assert "?subject=carol&amp;order=oldest&amp;p=2" in body
    assert len(_shown(op_client, "?subject=carol&p=2")) == 5


def test_a_superuser_filters_by_tenant(client: Client, memory_a: Memory, memory_b: Memory) -> None:
    root = get_user_model().objects.create_superuser("root", password="pw")
    client.force_login(root)
    both = _shown(client)
    assert {str(memory_a.pending_fact.id), str(memory_b.pending_fact.id)} <= set(both)
    assert _shown(client, f"?tenant={memory_b.tenant.id}") == [str(memory_b.pending_fact.id)]
    body = client.get(REVIEW).content.decode()
    assert f'value="{memory_b.tenant.id}"' in body  # the tenant choice is offered


def test_an_operator_never_reaches_another_tenants_rows_through_the_filters(
    op_client: Client, memory_a: Memory, memory_b: Memory
) -> None:
    assert _shown(op_client, f"?tenant={memory_b.tenant.id}") == []
    assert _shown(op_client, "?subject=bob") == []
    assert _shown(op_client, "?q=bob") == []
    assert _shown(op_client, "?q=Acme") == [str(memory_a.pending_fact.id)]  # B's pending fact is an Acme too
    body = op_client.get(REVIEW).content.decode()
    assert str(memory_b.tenant.id) not in body and "tenant-b" not in body


def test_an_operator_of_two_tenants_filters_by_tenant(client: Client, memory_a: Memory, memory_b: Memory) -> None:
    both: Any = make_operator("op-ab", memory_a.tenant, memory_b.tenant)
    client.force_login(both)
    assert _shown(client, f"?tenant={memory_a.tenant.id}") == [str(memory_a.pending_fact.id)]
    assert _shown(client, "?tenant=not-a-uuid") == []

"""Operators see only their tenants in the admin; superusers see all."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from tenants.services import membership_add

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator_a(tenant_a):  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user("op-a", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="tenants"))
    membership_add(tenant=tenant_a, user=user)
    return user


def test_staff_operator_lists_only_their_tenants_keys(client, operator_a, ctx_a, ctx_b) -> None:
    client.force_login(operator_a)
    response = client.get("/admin/tenants/apikey/")
    assert response.status_code == 200
    body = response.content.decode()
    assert ctx_a.api_key.prefix in body
    assert ctx_b.api_key.prefix not in body


def test_staff_operator_cannot_open_another_tenants_key_by_url(client, operator_a, ctx_b) -> None:
    client.force_login(operator_a)
    response = client.get(f"/admin/tenants/apikey/{ctx_b.api_key.pk}/change/", follow=True)
    assert ctx_b.api_key.prefix not in response.content.decode()
    assert response.redirect_chain and response.redirect_chain[-1][0].endswith("/admin/")


def test_staff_operator_sees_only_their_tenant(client, operator_a, tenant_a, tenant_b) -> None:
    client.force_login(operator_a)
    body = client.get("/admin/tenants/tenant/").content.decode()
    assert tenant_a.slug in body
    assert tenant_b.slug not in body


def test_superuser_sees_every_tenant(client, ctx_a, ctx_b) -> None:
    admin = get_user_model().objects.create_superuser("root", "root@localhost", "pw")
    client.force_login(admin)
    body = client.get("/admin/tenants/apikey/").content.decode()
    assert ctx_a.api_key.prefix in body
    assert ctx_b.api_key.prefix in body


def test_staff_without_membership_sees_nothing(client, ctx_a) -> None:
    user = get_user_model().objects.create_user("op-none", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="tenants"))
    client.force_login(user)
    body = client.get("/admin/tenants/apikey/").content.decode()
    assert ctx_a.api_key.prefix not in body

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from tenants.models import ApiKey, Tenant
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def test_create_tenant_prints_a_working_key_once(client) -> None:
    out = io.StringIO()
    call_command("create_tenant", "Acme Corp", "--quiet-key", stdout=out)
    raw = out.getvalue().strip()
    assert raw.startswith("eng_")
    tenant = Tenant.objects.get(slug="acme-corp")
    with tenant_scope(tenant):
        stored = ApiKey.objects.get(tenant=tenant)
    assert raw not in (stored.key_hash, stored.prefix)
    assert client.get("/v1/tenant", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200


def test_create_tenant_if_not_exists_is_idempotent() -> None:
    call_command("create_tenant", "Demo", "--if-not-exists", stdout=io.StringIO())
    out = io.StringIO()
    call_command("create_tenant", "Demo", "--if-not-exists", stdout=out)
    assert "exists" in out.getvalue()
    assert Tenant.objects.filter(slug="demo").count() == 1


def test_create_and_revoke_api_key(client, tenant_a) -> None:
    out = io.StringIO()
    call_command("create_api_key", "--tenant", tenant_a.slug, "--scopes", "read", stdout=out)
    raw = out.getvalue().strip()
    assert client.get("/v1/tenant", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    call_command("revoke_api_key", "--tenant", tenant_a.slug, raw, stdout=io.StringIO())
    assert client.get("/v1/tenant", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401

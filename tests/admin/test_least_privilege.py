"""Least privilege in the operator admin: platform rows (periodic tasks and their schedules) and a
tenant's platform fields (active, settings with its rate limit) are for superusers only; API key
scopes are validated wherever they are saved, and a key holds exactly the scopes it lists."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.test import Client
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from consolidation.schedules import schedules_setup
from tenants.models import ApiKey, Tenant
from tenants.scope import tenant_scope
from tenants.services import api_key_create

pytestmark = pytest.mark.django_db

BEAT_MODELS = ["periodictask", "intervalschedule", "crontabschedule", "solarschedule", "clockedschedule"]


@pytest.fixture
def root_client(client: Client) -> Client:
    client.force_login(get_user_model().objects.create_superuser("root", "root@localhost", "pw-root-1"))
    return client


@pytest.fixture
def erasure_schedule(db: None) -> PeriodicTask:
    schedules_setup()
    return PeriodicTask.objects.get(task="privacy.tasks.process_erasure_requests")


@pytest.mark.parametrize("model", BEAT_MODELS)
def test_staff_operator_cannot_list_or_add_platform_schedules(op_client: Client, model: str) -> None:
    assert op_client.get(f"/admin/django_celery_beat/{model}/").status_code == 403
    assert op_client.get(f"/admin/django_celery_beat/{model}/add/").status_code == 403


def test_staff_operator_cannot_disable_erasure_processing_or_schedule_a_task(
    op_client: Client, erasure_schedule: PeriodicTask, tenant_b: Tenant
) -> None:
    url = f"/admin/django_celery_beat/periodictask/{erasure_schedule.pk}/change/"
    assert op_client.get(url).status_code == 403
    assert op_client.post(url, {"name": erasure_schedule.name, "enabled": ""}).status_code == 403
    assert (
        op_client.post(
            f"/admin/django_celery_beat/periodictask/{erasure_schedule.pk}/delete/", {"post": "yes"}
        ).status_code
        == 403
    )
    interval = IntervalSchedule.objects.first()
    forged = {
        "name": "forged",
        "task": "privacy.tasks.execute_erasure",
        "args": json.dumps([str(tenant_b.id), "x"]),
        "kwargs": "{}",
        "interval": interval.pk if interval else "",
        "enabled": "on",
    }
    assert op_client.post("/admin/django_celery_beat/periodictask/add/", forged).status_code == 403
    erasure_schedule.refresh_from_db()
    assert erasure_schedule.enabled and not PeriodicTask.objects.filter(name="forged").exists()
    index = op_client.get("/admin/").content.decode()
    assert "django_celery_beat" not in index and "Periodic tasks" not in index


def test_superuser_manages_schedules(root_client: Client, erasure_schedule: PeriodicTask) -> None:
    assert root_client.get("/admin/django_celery_beat/periodictask/").status_code == 200
    url = f"/admin/django_celery_beat/periodictask/{erasure_schedule.pk}/change/"
    assert root_client.get(url).status_code == 200
    assert CrontabSchedule.objects.exists()
    assert root_client.get("/admin/django_celery_beat/crontabschedule/").status_code == 200


def _tenant_form(tenant: Tenant, **changes: Any) -> dict[str, Any]:
    data = {
        "name": tenant.name,
        "slug": tenant.slug,
        "settings": json.dumps(tenant.settings),
        "created_at_0": tenant.created_at.strftime("%Y-%m-%d"),
        "created_at_1": tenant.created_at.strftime("%H:%M:%S"),
        "memberships-TOTAL_FORMS": "0",
        "memberships-INITIAL_FORMS": "0",
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    if tenant.active:
        data["active"] = "on"
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def _inline_prefix(client: Client, tenant: Tenant) -> str:
    page = client.get(f"/admin/tenants/tenant/{tenant.pk}/change/").content.decode()
    for candidate in ("memberships", "tenantmembership_set"):
        if f'name="{candidate}-TOTAL_FORMS"' in page:
            return candidate
    raise AssertionError("membership inline not found")


def _post_tenant(client: Client, tenant: Tenant, **changes: Any) -> Any:
    prefix = _inline_prefix(client, tenant)
    data = {k.replace("memberships-", f"{prefix}-"): v for k, v in _tenant_form(tenant, **changes).items()}
    return client.post(f"/admin/tenants/tenant/{tenant.pk}/change/", data)


def test_staff_operator_cannot_change_their_tenants_active_flag_settings_or_rate_limit(
    op_client: Client, tenant_a: Tenant
) -> None:
    response = _post_tenant(
        op_client,
        tenant_a,
        name="Renamed A",
        active=None,
        settings=json.dumps({"rate_limit_per_minute": 10**9, "retention_days": 1}),
    )
    assert response.status_code in (200, 302)
    tenant_a.refresh_from_db()
    assert tenant_a.name == "Renamed A"  # what is theirs to edit still saves
    assert tenant_a.active and tenant_a.settings == {}
    assert tenant_a.config.rate_limit_per_minute == 6000
    page = op_client.get(f"/admin/tenants/tenant/{tenant_a.pk}/change/").content.decode()
    assert 'name="settings"' not in page and 'name="active"' not in page


def test_superuser_changes_a_tenants_platform_fields(root_client: Client, tenant_a: Tenant) -> None:
    response = _post_tenant(root_client, tenant_a, settings=json.dumps({"rate_limit_per_minute": 60}))
    assert response.status_code == 302, re.findall(r'class="errorlist[^>]*>(.*?)</ul>', response.content.decode(), re.S)
    tenant_a.refresh_from_db()
    assert tenant_a.config.rate_limit_per_minute == 60


def _key_form(tenant: Tenant, name: str, scopes: Any) -> dict[str, Any]:
    return {"tenant": str(tenant.pk), "name": name, "scopes": scopes}


@pytest.mark.parametrize(
    "scopes", [["superuser"], [], "readwrite", ["admin", "root"], '"readwrite"', '["superuser"]', '{"admin": 1}']
)
def test_admin_refuses_unknown_or_malformed_scopes(op_client: Client, tenant_a: Tenant, scopes: Any) -> None:
    response = op_client.post("/admin/tenants/apikey/add/", _key_form(tenant_a, "bad", scopes))
    assert response.status_code == 200  # the form again, with its errors
    with tenant_scope(tenant_a):
        assert not ApiKey.objects.for_tenant(tenant_a).filter(name="bad").exists()


def test_admin_edit_of_a_keys_scopes_is_validated_too(op_client: Client, tenant_a: Tenant) -> None:
    issued = api_key_create(tenant=tenant_a, name="svc", scopes=("read",))
    url = f"/admin/tenants/apikey/{issued.api_key.pk}/change/"
    assert op_client.post(url, _key_form(tenant_a, "svc", ["administrator"])).status_code == 200
    assert op_client.post(url, _key_form(tenant_a, "svc", ["read", "write"])).status_code == 302
    with tenant_scope(tenant_a):
        assert ApiKey.objects.for_tenant(tenant_a).get(pk=issued.api_key.pk).scopes == ["read", "write"]


@pytest.mark.parametrize(
    ("stored", "scope", "granted"),
    [
        ("readwrite", "read", False),
        ("administrator", "admin", False),
        ({"admin": True}, "admin", False),
        (["read", 5], "read", False),
        (["read"], "write", False),
        (["read"], "read", True),
        (["admin"], "write", True),
    ],
)
def test_has_scope_is_exact_on_a_valid_list(tenant_a: Tenant, stored: Any, scope: str, granted: bool) -> None:
    key = ApiKey(tenant=tenant_a, name="k", scopes=stored)
    assert key.has_scope(scope) is granted


def test_model_validation_refuses_malformed_scopes(tenant_a: Tenant) -> None:
    with tenant_scope(tenant_a):
        with pytest.raises(ValidationError):
            ApiKey(tenant=tenant_a, name="k", prefix="p", key_hash="h", scopes="admin").full_clean()
        ApiKey(tenant=tenant_a, name="k", prefix="p", key_hash="h", scopes=["read"]).full_clean()

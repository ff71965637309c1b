from __future__ import annotations

import pytest
from celery import shared_task

from tenants.models import ApiKey, Tenant
from tenants.scope import tenant_scope
from tenants.tasks import TenantTask

pytestmark = pytest.mark.django_db


@shared_task(base=TenantTask)
def count_keys(tenant: Tenant) -> int:
    with tenant_scope(tenant):
        return ApiKey.objects.count()


def test_task_receives_the_tenant_and_sees_only_its_rows(ctx_a, ctx_b, tenant_a) -> None:
    assert count_keys.delay(str(tenant_a.id)).get() == 1


def test_task_for_a_missing_tenant_is_skipped() -> None:
    import uuid

    assert count_keys.delay(str(uuid.uuid4())).get() is None

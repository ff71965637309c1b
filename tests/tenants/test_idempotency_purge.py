"""Stored idempotent answers are purged once older than ENGRAM_IDEMPOTENCY_TTL_HOURS, on a schedule."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from config.celery import app
from consolidation.schedules import SCHEDULES
from tenants.models import IdempotencyRecord, IdempotencyTombstone
from tenants.scope import tenant_scope
from tenants.tasks import purge_idempotency_records

pytestmark = pytest.mark.django_db


def _age(tenant, key: str, hours: float) -> None:
    with tenant_scope(tenant):
        IdempotencyRecord.objects.for_tenant(tenant).filter(key=key).update(
            created_at=timezone.now() - timedelta(hours=hours)
        )


def _post(api, key: str):
    body = {"name": f"p-{key}", "trigger": {"keywords": ["hi"]}, "behaviour": "Wave."}
    return api.post("/v1/procedures", body, format="json", HTTP_IDEMPOTENCY_KEY=key)


def _keys(tenant) -> set[str]:
    with tenant_scope(tenant):
        return set(IdempotencyRecord.objects.for_tenant(tenant).values_list("key", flat=True))


def test_records_past_the_ttl_are_purged_in_every_tenant_and_a_replay_then_runs_again(
    api_a, api_b, tenant_a, tenant_b, settings, django_capture_on_commit_callbacks
) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "IDEMPOTENCY_TTL_HOURS": 24}
    with django_capture_on_commit_callbacks(execute=True):
        for api in (api_a, api_b):
            for key in ("old", "new"):
                assert _post(api, key).status_code == 201
    _age(tenant_a, "old", 25)
    _age(tenant_b, "old", 25)
    _age(tenant_a, "new", 23)

    assert purge_idempotency_records() == 2
    assert purge_idempotency_records() == 0

    assert _keys(tenant_a) == {"new"} and _keys(tenant_b) == {"new"}
    assert "Idempotent-Replayed" in _post(api_a, "new")
    assert "Idempotent-Replayed" not in _post(api_a, "old")


def test_the_ttl_comes_from_the_setting(tenant_a, api_a, settings, django_capture_on_commit_callbacks) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "IDEMPOTENCY_TTL_HOURS": 1}
    with django_capture_on_commit_callbacks(execute=True):
        assert _post(api_a, "k").status_code == 201
    _age(tenant_a, "k", 2)
    assert purge_idempotency_records() == 1


def test_the_purge_is_on_the_schedule_and_registered_with_celery() -> None:
    tasks = {s.task for s in SCHEDULES}
    assert "tenants.tasks.purge_idempotency_records" in tasks
    app.loader.import_default_modules()
    assert tasks <= set(app.tasks)


def test_the_backfill_adds_the_subjects_named_in_records_stored_before(tenant_a, tenant_b) -> None:
    import importlib

    from django.db import connection

    backfill = importlib.import_module("tenants.migrations.0006_idempotency_subjects_backfill").BACKFILL
    body = {"fact": {"subject": "yan", "entity": "acme"}, "previous": None, "items": [{"subject": "zoe"}]}
    for tenant in (tenant_a, tenant_b):
        with tenant_scope(tenant):
            IdempotencyRecord.objects.create(
                tenant=tenant,
                key="old",
                method="POST",
                path="/v1/facts",
                request_hash="h",
                response_status=201,
                response_body=body,
                subjects=[],
            )
    with connection.cursor() as cursor:
        cursor.execute(backfill)
    for tenant in (tenant_a, tenant_b):
        with tenant_scope(tenant):
            assert IdempotencyRecord.objects.for_tenant(tenant).get(key="old").subjects == ["acme", "yan", "zoe"]


def test_tombstones_of_erased_keys_go_with_the_ttl_of_their_record(tenant_a, api_a, settings) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "IDEMPOTENCY_TTL_HOURS": 24}
    with tenant_scope(tenant_a):
        for key, hours in (("old", 25), ("new", 23)):
            IdempotencyTombstone.objects.create(
                tenant=tenant_a,
                key_hash=IdempotencyTombstone.hash_key(tenant_a.id, key),
                created_at=timezone.now() - timedelta(hours=hours),
            )

    assert purge_idempotency_records() == 1

    assert _post(api_a, "new").status_code == 409
    assert _post(api_a, "old").status_code == 201

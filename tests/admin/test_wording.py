"""The admin's words: one name per list, English plurals and acronyms, durations and times a person
reads (no "0 minutes", no microseconds)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from privacy.models import ErasureRequest, ErasureStatus
from tenants.scope import tenant_scope
from tests.factories.admin import Memory

pytestmark = pytest.mark.django_db

AUDIT = "/admin/semantic/factchange/"


def test_the_lists_are_named_in_english_and_the_audit_by_one_name(op_client: Client, memory_a: Memory) -> None:
    index = op_client.get("/admin/").content.decode()
    assert "Context feedbacks" not in index and ">Context feedback<" in index
    # Every change of every fact, not conflicts alone: "Fact changes", on the index, the list and the revert.
    assert "onflict audit" not in index and index.count(">Fact changes<") == 2  # the shortcut and the app list
    audit = op_client.get(AUDIT).content.decode()
    assert "onflict audit" not in audit
    revert = op_client.get(f"{AUDIT}{memory_a.supersession_id}/revert/").content.decode()
    assert "onflict audit" not in revert and ">Fact changes<" in revert
    review = op_client.get("/admin/semantic/fact/review/").content.decode()
    fact = op_client.get(f"/admin/semantic/fact/{memory_a.old_fact.id}/change/").content.decode()
    assert "onflict audit" not in review and "onflict audit" not in fact


def test_the_actor_filter_says_api_key(op_client: Client, memory_a: Memory) -> None:
    audit = op_client.get(AUDIT).content.decode()
    assert "Api Key" not in audit and "API key" in audit


def _done_request(tenant: Any, took: timedelta) -> ErasureRequest:
    from privacy.services import erasure_request_create

    request = erasure_request_create(tenant=tenant, subject="alice")
    completed = timezone.now().replace(microsecond=123456)
    with tenant_scope(tenant):
        ErasureRequest.objects.filter(pk=request.pk).update(
            status=ErasureStatus.DONE,
            created_at=completed - took,
            started_at=completed - took,
            completed_at=completed,
            receipt={
                "request_id": str(request.pk),
                "subject_hash": "ab" * 32,
                "completed_at": completed.isoformat(),
                "locations": {"episodes": 3},
                "verified_zero": ["episodes"],
            },
            verification={"remaining": {"episodes": 0}, "verified_at": completed.isoformat()},
        )
        return ErasureRequest.objects.get(pk=request.pk)


def test_an_erasure_done_within_a_minute_says_its_seconds_and_times_have_no_microseconds(
    op_client: Client, memory_a: Memory, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=False):
        request = _done_request(memory_a.tenant, timedelta(seconds=12))
    page = op_client.get(f"/admin/privacy/erasurerequest/{request.pk}/change/").content.decode()
    listing = op_client.get("/admin/privacy/erasurerequest/").content.decode()
    for text in (page, listing):
        assert "0\xa0minutes" not in text and "done in 12\xa0seconds" in text
    assert ".123456" not in page and "123456" not in page
    shown = timezone.localtime(request.completed_at).strftime("%Y-%m-%d %H:%M:%S")
    assert shown in page

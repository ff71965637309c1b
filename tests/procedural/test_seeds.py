"""The seed procedures: idempotent, and each applies to the situation it was written for."""

from __future__ import annotations

import pytest

from procedural.models import Procedure, ProcedureStatus
from procedural.seeds import seed_procedures
from procedural.selectors import procedure_match
from procedural.services import procedure_update
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db


def _top(tenant, **kw) -> str:
    with tenant_scope(tenant):
        matches = procedure_match(tenant=tenant, **kw)
    return matches[0].procedure.name if matches else ""


def test_seeding_is_idempotent_even_after_edits(tenant_a) -> None:
    first = seed_procedures(tenant=tenant_a)
    assert len(first) == 3 and all(p.status == ProcedureStatus.ACTIVE for p in first)
    with tenant_scope(tenant_a):
        procedure_update(tenant=tenant_a, procedure_id=first[0].pk, actor="op", changes={"name": "Backoff, edited"})
    again = seed_procedures(tenant=tenant_a)
    assert again[0].name == "Backoff, edited" and [p.lineage for p in again] == [p.lineage for p in first]
    with tenant_scope(tenant_a):
        assert Procedure.objects.for_tenant(tenant_a).count() == 4  # three seeds and one edit


def test_seeds_are_per_tenant(tenant_a, tenant_b) -> None:
    a = seed_procedures(tenant=tenant_a)
    b = seed_procedures(tenant=tenant_b)
    assert {p.lineage for p in a}.isdisjoint({p.lineage for p in b})


def test_each_seed_applies_to_its_situation(tenant_a) -> None:
    seed_procedures(tenant=tenant_a)
    assert _top(
        tenant_a, tool_events=[{"kind": "tool_result", "payload": {"tool": "crm_api", "status_code": 429}}]
    ) == ("Back off exponentially after HTTP 429")
    assert _top(tenant_a, message="I'm getting an error when I start the app, how do I fix it?") == (
        "Ask for the error log before suggesting a fix"
    )
    assert _top(tenant_a, message="ok, commit the changes and push the branch") == "Run the tests before committing"
    assert _top(tenant_a, tool_events=[{"name": "git_commit"}]) == "Run the tests before committing"
    assert _top(tenant_a, message="what's the capital of Peru?") == ""

"""facts_expire_left: the subject said they left a value; their earlier live facts that hold it expire,
audited; a fact that only shares a name with it, a fact of what happened, a fact said again later and
another subject's fact stay."""

from __future__ import annotations

import pytest

from semantic.models import Fact, FactChange, FactChangeKind, FactStatus
from semantic.services import facts_expire_left
from tenants.scope import tenant_scope
from tests.semantic.conftest import ACTOR, at

pytestmark = pytest.mark.django_db

CONTEXT = frozenset({"code", "review", "moved", "hana"})


def _about(upsert, value: str, *, attribute: str = "about", subject: str = "user-1", days: float = 0):
    return upsert(
        subject=subject,
        entity=subject,
        attribute=attribute,
        value=value,
        statement=f"{subject} {value}.",
        cardinality="multi",
        observed_at=at(days),
    ).fact


def _expire(tenant, **overrides) -> int:
    args = {"subject": "user-1", "value": "Oskar", "context": CONTEXT, "before": at(10), "source_episode_id": -1}
    with tenant_scope(tenant):
        return facts_expire_left(tenant=tenant, actor=ACTOR, **{**args, **overrides})


def test_the_fact_that_holds_the_value_expires_and_the_others_stay(tenant_a, upsert) -> None:
    reviewer = _about(upsert, "has Oskar review their pull requests")
    brother = _about(upsert, "has a brother, Oskar", attribute="relations")
    history = _about(upsert, "asked Oskar for a review once", attribute="experiences")
    later = _about(upsert, "has Oskar review the release notes", days=11)
    other = _about(upsert, "has Oskar review their pull requests", subject="user-2")
    assert _expire(tenant_a) == 1
    with tenant_scope(tenant_a):
        status = dict(Fact.objects.values_list("id", "status"))
        change = FactChange.objects.get(fact_id=reviewer.id, kind=FactChangeKind.EXPIRED)
    assert status[reviewer.id] == FactStatus.EXPIRED
    assert {status[f.id] for f in (brother, history, later, other)} == {FactStatus.ACTIVE}
    assert "left Oskar" in change.reason


def test_a_new_version_expires_the_facts_of_another_version(tenant_a, upsert) -> None:
    old = _about(upsert, "builds the web app on Django 4.2")
    same = _about(upsert, "pins Django 5.0 in the lock file")
    assert _expire(tenant_a, value="Django", version="5.0", context=frozenset({"web", "app"})) == 1
    with tenant_scope(tenant_a):
        status = dict(Fact.objects.values_list("id", "status"))
    assert status[old.id] == FactStatus.EXPIRED and status[same.id] == FactStatus.ACTIVE

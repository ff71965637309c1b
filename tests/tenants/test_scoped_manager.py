"""The manager of every tenant model applies the active scope itself: a query that names no tenant
gets the scope's rows, and `.for_tenant()` only asserts (or narrows a scope of several tenants); the
application calls it nowhere, its entry points enter the scope instead.

Row-level security would hide another tenant's rows anyway; these tests widen the database setting
to both tenants while the Python scope holds one, so what they see is the manager's doing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from consolidation.models import ConsolidationRun, RunTrigger
from core.db import set_local
from episodic.models import Episode, Session
from privacy.models import ErasureRequest
from privacy.services import erasure_request_create
from procedural.models import Procedure
from router.models import ContextTrace
from semantic.models import Fact
from tenants.models import ApiKey, Tenant, TenantModel
from tenants.scope import SETTING, ScopeError, narrowed_to, scopes_disabled, tenant_scope
from tests.factories.episodic import EpisodeFactory
from tests.factories.procedural import ProcedureFactory
from tests.factories.semantic import FactFactory

pytestmark = pytest.mark.django_db

TENANT_MODELS = sorted((m for m in apps.get_models() if issubclass(m, TenantModel)), key=lambda m: m._meta.label)


def _seed(tenant: Tenant) -> None:
    EpisodeFactory(tenant=tenant)
    FactFactory(tenant=tenant)
    ProcedureFactory(tenant=tenant)
    with tenant_scope(tenant):
        ContextTrace.objects.create(tenant=tenant, subject="alice", policy="test")
        ConsolidationRun.objects.create(tenant=tenant, trigger=RunTrigger.MANUAL)
    erasure_request_create(tenant=tenant, subject="nobody")


def _rls_lets_through(*tenants: Tenant) -> None:
    """The database setting names every given tenant; the Python scope stays as it is."""
    set_local(SETTING, ",".join(str(t.id) for t in tenants))


def _where(model: type[TenantModel], sql: str) -> str:
    return sql.split(" WHERE ", 1)[1] if " WHERE " in sql else ""


# One model of each app that owns tenant tables.
MODEL_PER_APP = [Episode, Session, Fact, Procedure, ContextTrace, ConsolidationRun, ErasureRequest, ApiKey]


def test_the_models_queried_cover_every_app_with_tenant_tables() -> None:
    assert {m._meta.app_label for m in MODEL_PER_APP} == {m._meta.app_label for m in TENANT_MODELS}


def test_a_query_without_for_tenant_gets_only_the_scoped_tenants_rows(tenant_a, tenant_b) -> None:
    _seed(tenant_a)
    _seed(tenant_b)
    models = MODEL_PER_APP
    with tenant_scope(tenant_a):
        _rls_lets_through(tenant_a, tenant_b)
        with connection.cursor() as cursor:
            cursor.execute("SELECT DISTINCT tenant_id FROM episodic_episode")
            assert {r[0] for r in cursor.fetchall()} == {tenant_a.id, tenant_b.id}, "RLS should not filter here"
        for model in models:
            assert set(model.objects.values_list("tenant_id", flat=True)) == {tenant_a.id}, model
            assert model.objects.count() == model.objects.filter(tenant_id=tenant_a.id).count(), model
        # Related managers, subqueries and get() go through the same manager.
        session = Session.objects.get()
        assert {e.tenant_id for e in session.episodes.all()} == {tenant_a.id}
        assert Episode.objects.filter(session__in=Session.objects.all()).count() == 1


def test_a_scope_of_several_tenants_gets_theirs_and_for_tenant_narrows(tenant_a, tenant_b, ctx_a) -> None:
    _seed(tenant_a)
    _seed(tenant_b)
    third = Tenant.objects.create(name="Tenant C", slug="tenant-c")
    _seed(third)
    with tenant_scope(tenant_a, tenant_b):
        _rls_lets_through(tenant_a, tenant_b, third)
        assert set(Fact.objects.values_list("tenant_id", flat=True)) == {tenant_a.id, tenant_b.id}
        assert set(Fact.objects.for_tenant(tenant_b).values_list("tenant_id", flat=True)) == {tenant_b.id}
        with pytest.raises(ScopeError):
            Fact.objects.for_tenant(third)


def _db_setting() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s, true)", [SETTING])
        return {v for v in (cursor.fetchone()[0] or "").split(",") if v}


def test_narrowed_to_limits_a_scope_of_several_tenants_to_one_without_a_statement(tenant_a, tenant_b) -> None:
    _seed(tenant_a)
    _seed(tenant_b)
    both = {str(tenant_a.id), str(tenant_b.id)}
    with tenant_scope(tenant_a, tenant_b):
        with CaptureQueriesContext(connection) as captured, narrowed_to(tenant_b):
            pass
        assert captured.captured_queries == []
        with narrowed_to(tenant_b):
            assert set(Fact.objects.values_list("tenant_id", flat=True)) == {tenant_b.id}
            with tenant_scope(tenant_b):
                assert _db_setting() == {str(tenant_b.id)}
            # A scope entered inside puts back what the database admitted before it, both tenants.
            assert _db_setting() == both
        assert set(Fact.objects.values_list("tenant_id", flat=True)) == {tenant_a.id, tenant_b.id}
        third = Tenant.objects.create(name="Tenant C", slug="tenant-c")
        with pytest.raises(ScopeError), narrowed_to(third):
            pass
    with pytest.raises(ScopeError), narrowed_to(tenant_a):
        pass


def test_for_tenant_of_another_tenant_raises(tenant_a, tenant_b) -> None:
    with tenant_scope(tenant_a):
        with pytest.raises(ScopeError):
            ApiKey.objects.for_tenant(tenant_b)
        with pytest.raises(ScopeError):
            Episode.objects.filter(role="user").for_tenant(tenant_b.id)


def test_no_query_is_built_outside_a_scope(tenant_a) -> None:
    for model in TENANT_MODELS:
        with pytest.raises(ScopeError):
            model.objects.all()


def test_scopes_disabled_applies_no_filter_and_for_tenant_filters(tenant_a, tenant_b) -> None:
    with scopes_disabled():
        assert _where(Fact, str(Fact.objects.all().query)) == ""
        assert _where(Fact, str(Fact.objects.for_tenant(tenant_a).query)).count("tenant_id") == 1


@pytest.mark.parametrize("model", TENANT_MODELS, ids=lambda m: m._meta.label)
def test_the_scoped_tenant_is_named_once(model: type[TenantModel], tenant_a) -> None:
    with tenant_scope(tenant_a):
        for qs in (model.objects.all(), model.objects.for_tenant(tenant_a), model.objects.all().for_tenant(tenant_a)):
            where = _where(model, str(qs.query))
            # `tenant_id = <the one tenant>`, once: a distributed planner routes it to one shard.
            assert re.findall(r"\"tenant_id\" = (\S+)", where) == [str(tenant_a.id)], where


def test_an_or_with_an_unlimited_queryset_is_not_taken_as_limited(tenant_a) -> None:
    with scopes_disabled():
        either = Fact.objects.for_tenant(tenant_a) | Fact.objects.filter(entity="acme")
        where = _where(Fact, str(either.for_tenant(tenant_a).query))
        assert where.count("tenant_id") == 2, where


ROOT = Path(__file__).resolve().parents[2]
APPLICATION = (
    "core", "tenants", "api", "episodic", "semantic", "procedural", "router", "consolidation", "dashboard",
    "evaluation", "demo", "bench", "config",
)  # fmt: skip


def _for_tenant_calls(source: str) -> list[int]:
    """Lines calling `.for_tenant(...)`, except the managers' own delegation to their queryset."""
    tree = ast.parse(source)
    delegating = {
        id(call)
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef) and fn.name == "for_tenant"
        for call in ast.walk(fn)
    }
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "for_tenant"
        and id(node) not in delegating
    ]


def test_application_code_calls_for_tenant_nowhere() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for package in APPLICATION
        for path in sorted((ROOT / package).rglob("*.py"))
        if "/migrations/" not in path.as_posix()
        for line in _for_tenant_calls(path.read_text())
    ]
    assert found == [], "enter the tenant's scope at the entry point instead: " + ", ".join(found)

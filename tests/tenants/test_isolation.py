"""Tenant isolation enforced by PostgreSQL itself, proven as the application role."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection, transaction
from django.db.utils import ProgrammingError
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver

from tenants.models import ApiKey, IdempotencyRecord
from tenants.scope import ScopeError, scopes_disabled, tenant_scope
from tests.conftest import ISOLATION_COVERED

pytestmark = pytest.mark.django_db


def _tenant_tables() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
            ORDER BY c.relname
            """
        )
        return [row[0] for row in cursor.fetchall()]


def test_app_role_is_neither_superuser_nor_bypassrls() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False, False)


def test_every_tenant_table_has_forced_rls_and_a_policy() -> None:
    tables = _tenant_tables()
    assert "tenants_apikey" in tables
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
                   (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relname = ANY(%s)
            """,
            [tables],
        )
        rows = cursor.fetchall()
    missing = [name for name, enabled, forced, policies in rows if not (enabled and forced and policies)]
    assert missing == [], f"tables with tenant_id but no forced row-level security policy: {missing}"


def test_every_tenant_table_has_an_index_led_by_tenant_id() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.relname FROM pg_class t
            JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE n.nspname = 'public' AND t.relname = ANY(%s)
              AND NOT EXISTS (
                SELECT 1 FROM pg_index i JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = i.indkey[0]
                WHERE i.indrelid = t.oid AND a.attname = 'tenant_id')
            """,
            [_tenant_tables()],
        )
        assert [r[0] for r in cursor.fetchall()] == []


def test_scoped_orm_and_raw_sql_see_none_of_another_tenant(tenant_a, tenant_b, ctx_a, ctx_b) -> None:
    with tenant_scope(tenant_a):
        # Even a query that forgets to filter by tenant sees only tenant A.
        assert set(ApiKey.objects.values_list("tenant_id", flat=True)) == {tenant_a.id}
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM tenants_apikey WHERE tenant_id = %s", [tenant_b.id])
            assert cursor.fetchone()[0] == 0
            cursor.execute("SELECT DISTINCT tenant_id FROM tenants_apikey")
            assert [r[0] for r in cursor.fetchall()] == [tenant_a.id]


def test_writing_another_tenants_row_is_refused(tenant_a, tenant_b) -> None:
    with tenant_scope(tenant_a):
        with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
            IdempotencyRecord.objects.create(
                tenant=tenant_b,
                key="k",
                method="POST",
                path="/",
                request_hash="x",
                response_status=201,
                response_body={},
            )


def test_update_cannot_move_a_row_into_another_tenant(tenant_a, tenant_b, ctx_a) -> None:
    with tenant_scope(tenant_a):
        with pytest.raises(ProgrammingError, match="row-level security"), transaction.atomic():
            ApiKey.objects.filter(tenant=tenant_a).update(tenant=tenant_b)


def test_without_a_tenant_nothing_is_visible(ctx_a, ctx_b) -> None:
    with scopes_disabled():
        assert ApiKey.objects.count() == 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM tenants_apikey")
        assert cursor.fetchone()[0] == 0


def test_default_manager_fails_closed_without_scope(ctx_a) -> None:
    with pytest.raises(ScopeError):
        list(ApiKey.objects.all())


def test_scope_is_restored_after_nested_block(tenant_a, tenant_b, ctx_a, ctx_b) -> None:
    with tenant_scope(tenant_a):
        with tenant_scope(tenant_b):
            assert set(ApiKey.objects.values_list("tenant_id", flat=True)) == {tenant_b.id}
        assert set(ApiKey.objects.values_list("tenant_id", flat=True)) == {tenant_a.id}
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('app.tenant_id', true)")
        assert (cursor.fetchone()[0] or "") == ""


@pytest.mark.django_db(transaction=True)
def test_reused_connection_carries_no_tenant_into_the_next_request(ctx_a) -> None:
    client = Client()
    response = client.get("/v1/tenant", HTTP_AUTHORIZATION=f"Bearer {ctx_a.raw_key}")
    assert response.status_code == 200
    # Same process, same persistent connection: the next unit of work starts with no tenant.
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(current_setting('app.tenant_id', true), '')")
        assert cursor.fetchone()[0] == ""
        cursor.execute("SELECT count(*) FROM tenants_apikey")
        assert cursor.fetchone()[0] == 0


def _v1_routes() -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []

    def walk(patterns, prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                out.append((prefix + str(p.pattern), p.name or ""))

    walk(get_resolver().url_patterns, "")
    return [(route, name) for route, name in out if route.startswith("v1/")]


def test_every_v1_endpoint_has_an_isolation_test(request) -> None:
    if request.config.option.keyword or request.config.args not in ([], ["tests"], ["tests/"]):
        pytest.skip("needs the whole suite collected")
    missing = sorted(name or route for route, name in _v1_routes() if name not in ISOLATION_COVERED)
    assert missing == [], f"/v1/ endpoints without a test marked @pytest.mark.isolation: {missing}"


@pytest.mark.isolation("tenant-detail")
def test_tenant_detail_shows_only_the_callers_tenant(api_a, api_b, tenant_a, tenant_b) -> None:
    assert api_a.get("/v1/tenant").json()["id"] == str(tenant_a.id)
    assert api_b.get("/v1/tenant").json()["id"] == str(tenant_b.id)


def test_unknown_uuid_is_not_found_shape(api_a) -> None:
    response = api_a.get(f"/v1/no-such-thing/{uuid.uuid4()}")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


def _setting_statements(captured: CaptureQueriesContext, name: str) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if name in q["sql"]]


def test_authentication_reads_its_key_and_enters_the_tenant_in_two_round_trips(ctx_a) -> None:
    client = Client()
    with CaptureQueriesContext(connection) as captured:
        response = client.get("/v1/tenant", HTTP_AUTHORIZATION=f"Bearer {ctx_a.raw_key}")
    assert response.status_code == 200
    prefix = _setting_statements(captured, "app.api_key_prefix")
    tenant = _setting_statements(captured, f"app.tenant_id = '{ctx_a.tenant.id}'")
    # The prefix goes with the key's lookup; it is cleared as the tenant is entered, in one batch.
    assert len(prefix) == 2 and "tenants_apikey" in prefix[0]
    assert tenant == [prefix[1]] and "app.api_key_prefix = ''" in prefix[1]


def test_a_key_that_fails_leaves_the_key_table_closed(ctx_a) -> None:
    client = Client()
    prefix = ctx_a.raw_key.split("_")[1]
    with transaction.atomic():
        response = client.get("/v1/tenant", HTTP_AUTHORIZATION=f"Bearer eng_{prefix}_wrong")
        assert response.status_code == 401
        with connection.cursor() as cursor:
            cursor.execute("SELECT coalesce(current_setting('app.api_key_prefix', true), '')")
            assert cursor.fetchone()[0] == ""
            cursor.execute("SELECT count(*) FROM tenants_apikey")
            assert cursor.fetchone()[0] == 0


@pytest.mark.django_db(transaction=True)
def test_a_scope_that_opens_its_transaction_sets_the_tenant_once(ctx_a) -> None:
    with CaptureQueriesContext(connection) as captured:
        with tenant_scope(ctx_a.tenant):
            assert ApiKey.objects.count() == 1
    # Not put back before the commit: the setting ends with the transaction.
    assert len(_setting_statements(captured, "app.tenant_id")) == 1
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(current_setting('app.tenant_id', true), '')")
        assert cursor.fetchone()[0] == ""
        cursor.execute("SELECT count(*) FROM tenants_apikey")
        assert cursor.fetchone()[0] == 0

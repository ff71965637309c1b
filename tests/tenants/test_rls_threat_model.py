"""What row-level security protects against, and what it does not (docs/security.md, "Tenant isolation").

The policies compare each row's tenant_id with the transaction-local setting `app.tenant_id`. They hold
against application code that forgets its tenant filter: the setting, entered by authentication, limits
every statement of the request, whatever the ORM or raw SQL asks. They are not a boundary against code
that runs SQL of its own choosing as the application role (a compromised web process): that role may
set the setting itself, to any tenant id, and tenant ids are not secret. These tests show both, as the
application role the web process logs in as."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from episodic.models import Episode
from tenants.scope import scopes_disabled, tenant_scope
from tests.conftest import TenantContext
from tests.factories.episodic import EpisodeFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _as_application_role() -> psycopg.Connection[Any]:
    user, password = settings.ENGRAM_TEST_APP_CREDENTIALS
    db = connection.settings_dict
    return psycopg.connect(host=db["HOST"], port=db["PORT"], dbname=db["NAME"], user=user, password=password)


def _two_tenants_with_episodes(ctx_a: TenantContext, ctx_b: TenantContext) -> None:
    for ctx in (ctx_a, ctx_b):
        for i in range(3):
            EpisodeFactory(tenant=ctx.tenant, subject="u-1", content=f"{ctx.tenant.name} episode {i}")


def test_an_api_read_that_forgets_its_tenant_filter_still_answers_only_the_callers_rows(
    ctx_a: TenantContext, ctx_b: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the policies are for: a selector that lost its filter (here: the ORM's guard lifted and no
    tenant condition at all) still reads one tenant's rows, because the request's transaction names
    only the caller's tenant."""
    _two_tenants_with_episodes(ctx_a, ctx_b)

    def forgetful(**_: Any) -> Any:
        with scopes_disabled():
            return Episode.objects.all().order_by("-occurred_at", "-id")

    monkeypatch.setattr("episodic.apis.episode_list", forgetful)
    response = ctx_a.client.get("/v1/episodes?limit=50")
    assert response.status_code == 200, response.content
    contents = [item["content"] for item in response.json()["results"]]
    assert len(contents) == 3 and all(text.startswith("Tenant A") for text in contents)


def test_raw_sql_without_a_tenant_condition_sees_only_the_scoped_tenant(
    ctx_a: TenantContext, ctx_b: TenantContext
) -> None:
    _two_tenants_with_episodes(ctx_a, ctx_b)
    with tenant_scope(ctx_a.tenant), connection.cursor() as cursor:
        cursor.execute("SELECT DISTINCT tenant_id FROM episodic_episode")
        assert [row[0] for row in cursor.fetchall()] == [ctx_a.tenant.id]


def test_what_the_policies_do_not_stop_sql_of_the_application_roles_choosing(
    ctx_a: TenantContext, ctx_b: TenantContext
) -> None:
    """Issue 40, item 5, kept as the documented limit: the application role reads the tenant ids and
    may name them all in its own setting. A process that runs SQL of its choosing as that role reads
    every tenant's rows; the defences against it are elsewhere (docs/security.md)."""
    _two_tenants_with_episodes(ctx_a, ctx_b)
    with _as_application_role() as conn, conn.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM episodic_episode")
        assert cursor.fetchone() == (0,), "no setting, no rows"
        cursor.execute("SELECT id::text FROM tenants_tenant")
        ids = [row[0] for row in cursor.fetchall()]
        assert {str(ctx_a.tenant.id), str(ctx_b.tenant.id)} <= set(ids)
        cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [",".join(ids)])
        cursor.execute("SELECT count(DISTINCT tenant_id), count(*) FROM episodic_episode")
        assert cursor.fetchone() == (2, 6)


def test_the_setting_of_one_transaction_never_reaches_the_next_on_the_same_connection(
    ctx_a: TenantContext, ctx_b: TenantContext
) -> None:
    """Why a pooled or persistent connection carries no tenant from one request into the next."""
    _two_tenants_with_episodes(ctx_a, ctx_b)
    with _as_application_role() as conn:
        with conn.transaction(), conn.cursor() as cursor:
            cursor.execute("SELECT set_config('app.tenant_id', %s, true)", [str(ctx_a.tenant.id)])
            cursor.execute("SELECT count(*) FROM episodic_episode")
            assert cursor.fetchone() == (3,)
        with conn.transaction(), conn.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM episodic_episode")
            assert cursor.fetchone() == (0,)

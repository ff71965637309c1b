"""The schema is Citus-ready: what `create_distributed_table` and `create_reference_table` check, read
from the catalog of the real test database. Each check is also shown to fail on a scratch table that
breaks its rule (temporary tables, gone with the test's transaction)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from django.apps import apps
from django.db import connection, models

from tenants import distribution as d

pytestmark = pytest.mark.django_db

Check = Callable[[Sequence[str] | None], list[str]]


def test_every_tenant_table_is_distributed_on_tenant_id_and_the_global_ones_are_reference_tables() -> None:
    distributed, reference = d.classify_tables()
    assert {"episodic_episode", "semantic_fact", "router_contexttrace", "tenants_idempotencyrecord"} <= set(
        distributed.values()
    )
    assert {
        "tenants_tenant",
        "tenants_apikey",
        "auth_user",
        "django_content_type",
        "django_celery_beat_periodictask",
    } <= set(reference.values())


@pytest.mark.parametrize("check", d.CHECKS, ids=lambda c: c.__name__)
def test_the_schema_passes(check: Check) -> None:
    assert check(None) == []


def test_django_cascades_nothing_between_tenant_tables() -> None:
    """Django's collector deletes or nulls dependents by foreign key id alone (`DELETE FROM
    episodic_passage WHERE episode_id IN (...)`), which Citus sends to every shard. The code deletes
    dependents itself through `.for_tenant()`; the deferred composite key refuses a dangling row."""
    distributed, _ = d.classify_tables()
    tenant_tables = set(distributed.values())
    cascading = sorted(
        f"{model._meta.label}.{field.name}: {field.remote_field.on_delete.__name__}"
        for model in apps.get_models()
        for field in model._meta.get_fields()
        if field.many_to_one
        and field.concrete
        and model._meta.db_table in tenant_tables
        and field.related_model._meta.db_table in tenant_tables
        and field.remote_field.on_delete is not models.DO_NOTHING
    )
    assert cascading == []


def _scratch(*statements: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()")
        row = cursor.fetchone()
        if row is None:
            cursor.execute("CREATE TEMP TABLE scratch_bootstrap (x int)")
            cursor.execute("SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()")
            row = cursor.fetchone()
        assert row is not None
        for statement in statements:
            cursor.execute(statement)
    return [str(row[0])]


GOOD = (
    "CREATE TEMP TABLE scratch_parent (tenant_id uuid NOT NULL, id bigint NOT NULL, PRIMARY KEY (tenant_id, id))",
    "ALTER TABLE scratch_parent ENABLE ROW LEVEL SECURITY",
    "ALTER TABLE scratch_parent FORCE ROW LEVEL SECURITY",
    "CREATE POLICY tenant_isolation ON scratch_parent USING (tenant_id = ANY (engram_current_tenants()))",
)


def test_a_well_shaped_scratch_table_passes_every_check() -> None:
    schemas = _scratch(*GOOD)
    assert d.citus_violations(schemas) == []


@pytest.mark.parametrize(
    ("check", "statements", "expected"),
    [
        (
            d.check_unique_keys,
            ["CREATE UNIQUE INDEX scratch_by_id ON scratch_parent (id)"],
            "scratch_parent: unique index scratch_by_id on (id) lacks tenant_id",
        ),
        (
            d.check_unique_keys,
            ["CREATE UNIQUE INDEX scratch_partial ON scratch_parent (id) WHERE id > 0"],
            "scratch_parent: unique index scratch_partial on (id) lacks tenant_id",
        ),
        (
            d.check_unique_keys,
            ["ALTER TABLE scratch_parent ADD CONSTRAINT scratch_excl EXCLUDE USING btree (id WITH =)"],
            "scratch_parent: exclusion constraint scratch_excl on (id) lacks tenant_id",
        ),
        (
            d.check_unique_keys,
            ["CREATE UNIQUE INDEX scratch_trailing ON scratch_parent (id, tenant_id)"],
            "scratch_parent: unique index scratch_trailing does not lead with tenant_id",
        ),
        (
            d.check_foreign_keys,
            [
                # No tenant_id column: a reference table, which may not point at a distributed one.
                "CREATE TEMP TABLE scratch_lone (id bigint PRIMARY KEY, parent_tenant uuid, parent_id bigint,"
                " FOREIGN KEY (parent_tenant, parent_id) REFERENCES scratch_parent (tenant_id, id))",
            ],
            "scratch_lone: foreign key scratch_lone_parent_tenant_parent_id_fkey from a reference table to "
            "distributed scratch_parent",
        ),
        (
            d.check_foreign_keys,
            [
                "ALTER TABLE scratch_parent ADD COLUMN code uuid, ADD UNIQUE (tenant_id, code)",
                "CREATE TEMP TABLE scratch_child (tenant_id uuid NOT NULL, id bigint, code uuid,"
                " PRIMARY KEY (tenant_id, id), FOREIGN KEY (code, tenant_id) REFERENCES scratch_parent"
                " (tenant_id, code))",
            ],
            "scratch_child: foreign key scratch_child_code_tenant_id_fkey has tenant_id at different positions",
        ),
        (
            d.check_foreign_keys,
            [
                "CREATE TEMP TABLE scratch_child (tenant_id uuid NOT NULL, id bigint, parent_id bigint,"
                " PRIMARY KEY (tenant_id, id), FOREIGN KEY (tenant_id, parent_id) REFERENCES scratch_parent"
                " ON DELETE SET NULL (parent_id))",
            ],
            "scratch_child: foreign key scratch_child_tenant_id_parent_id_fkey has ON DELETE SET NULL/SET DEFAULT",
        ),
        (
            d.check_foreign_keys,
            [
                "ALTER TABLE scratch_parent ADD COLUMN code bigint UNIQUE",
                "CREATE TEMP TABLE scratch_child (tenant_id uuid NOT NULL, id bigint, code bigint REFERENCES"
                " scratch_parent (code), PRIMARY KEY (tenant_id, id))",
            ],
            "scratch_child: foreign key scratch_child_code_fkey (code) -> scratch_parent lacks tenant_id",
        ),
        (
            d.check_distribution_column,
            ["CREATE TEMP TABLE scratch_loose (tenant_id uuid, id bigint)"],
            "scratch_loose: tenant_id is nullable",
        ),
        (
            d.check_distribution_column,
            ["CREATE TEMP TABLE scratch_text (tenant_id text NOT NULL, id bigint)"],
            "scratch_text: tenant_id is text",
        ),
        (
            d.check_generated_ids,
            ["CREATE TEMP TABLE scratch_serial (tenant_id uuid NOT NULL, id serial, PRIMARY KEY (tenant_id, id))"],
            "scratch_serial: generated column id is integer, not bigint",
        ),
        (
            d.check_triggers_and_rules,
            [
                "CREATE FUNCTION pg_temp.scratch_guard() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$",
                "CREATE TRIGGER scratch_guard BEFORE UPDATE ON scratch_parent FOR EACH ROW"
                " EXECUTE FUNCTION pg_temp.scratch_guard()",
            ],
            "scratch_parent: trigger scratch_guard",
        ),
        (
            d.check_triggers_and_rules,
            ["CREATE RULE scratch_no_delete AS ON DELETE TO scratch_parent DO INSTEAD NOTHING"],
            "scratch_parent: rule scratch_no_delete",
        ),
        (
            d.check_row_level_security,
            ["ALTER TABLE scratch_parent NO FORCE ROW LEVEL SECURITY"],
            "scratch_parent: row-level security is not enabled and forced",
        ),
        (
            d.check_row_level_security,
            ["CREATE TEMP TABLE scratch_open (tenant_id uuid NOT NULL, id bigint, PRIMARY KEY (tenant_id, id))"],
            "scratch_open: no row-level security policy",
        ),
        (
            d.check_row_level_security,
            [
                "CREATE POLICY scratch_nested ON scratch_parent AS RESTRICTIVE USING"
                " (tenant_id IN (SELECT t.tenant_id FROM scratch_parent t))"
            ],
            "scratch_parent: policy scratch_nested contains a subquery",
        ),
    ],
)
def test_each_check_reports_a_violating_scratch_table(check: Check, statements: list[str], expected: str) -> None:
    schemas = _scratch(*GOOD, *statements)
    found = check(schemas)
    assert any(message.startswith(expected) for message in found), found

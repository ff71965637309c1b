"""Row-level security for tenant tables, as one reusable migration operation.

Every table with a tenant_id column gets, in the migration that creates it:

    operations = [..., enable_rls("episodic_episode")]

The policy compares tenant_id with the transaction-local setting `app.tenant_id` (a comma-separated
list: one id for API calls, the operator's tenants in the admin). An unset or empty setting matches
nothing, so code that forgot to enter a scope sees no rows rather than every row.
"""

from __future__ import annotations

from django.db import migrations

CURRENT_TENANTS_FUNCTION = """
CREATE OR REPLACE FUNCTION engram_current_tenants() RETURNS uuid[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        string_to_array(nullif(current_setting('app.tenant_id', true), ''), ',')::uuid[],
        '{}'::uuid[]
    )
$$;
"""


def enable_rls(table: str, column: str = "tenant_id", *, also_visible_when: str = "") -> migrations.RunSQL:
    """`also_visible_when` widens reads only (never writes), for the one lookup that must happen before
    the tenant is known: an API key found by its prefix."""
    predicate = f"{column} = ANY (engram_current_tenants())"
    visible = f"({predicate}) OR ({also_visible_when})" if also_visible_when else predicate
    return migrations.RunSQL(
        sql=[
            f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY',
            f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY',
            f'DROP POLICY IF EXISTS tenant_isolation ON "{table}"',
            f'CREATE POLICY tenant_isolation ON "{table}" USING ({visible}) WITH CHECK ({predicate})',
        ],
        reverse_sql=[
            f'DROP POLICY IF EXISTS tenant_isolation ON "{table}"',
            f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY',
            f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY',
        ],
    )


def create_current_tenants_function() -> migrations.RunSQL:
    return migrations.RunSQL(
        sql=CURRENT_TENANTS_FUNCTION, reverse_sql="DROP FUNCTION IF EXISTS engram_current_tenants()"
    )


def mark_leakproof(*signatures: str) -> migrations.RunSQL:
    """Let the planner use GIN indexes under row-level security.

    PostgreSQL evaluates the policy's qual before any qual whose operator is not LEAKPROOF, and so
    cannot use an index for such a qual: `&&`, `@>` on arrays and `@@` on tsvectors would all fall
    back to filtering every row of the tenant. These three functions raise no data-dependent errors,
    so declaring them leakproof is sound. Only a superuser may do it; a migration run by a lesser
    owner leaves a notice and queries stay correct, only slower on large tenants.
    """
    # Signatures are constants written in migrations, never input.
    statements = "; ".join(f"ALTER FUNCTION {sig} LEAKPROOF" for sig in signatures)
    sql = (
        "DO $$ BEGIN IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN "  # noqa: S608
        + statements
        + "; ELSE RAISE NOTICE 'not a superuser: GIN searches under row-level security will not use their indexes';"
        + " END IF; END $$;"
    )
    return migrations.RunSQL(
        sql=sql,
        reverse_sql=migrations.RunSQL.noop,
    )

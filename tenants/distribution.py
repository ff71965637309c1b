"""The database keys Citus needs to distribute every tenant table on tenant_id, and the checks that hold them.

Django keeps `id` as each model's primary key; the database's primary key is `(tenant_id, id)`, and a
foreign key between two tenant tables is `(tenant_id, x_id) -> (tenant_id, id)`, written here in SQL
(the Django field says `db_constraint=False` and `on_delete=DO_NOTHING`: Django's cascades select and
delete by foreign key id alone, so the code deletes dependents itself, in the tenant's scope).

The checks read the catalog and return one message per violation, naming the table and the rule, so
that a table added later without these keys fails the catalog tests (tests/tenants/test_citus_readiness.py)
before it reaches a Citus cluster, where `create_distributed_table` would refuse it. docs/scale-out.md
is the runbook that uses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, migrations

DISTRIBUTION_COLUMN = "tenant_id"

# Global tables: Citus reference tables, a full copy on every node. They either have no tenant_id
# (tenants_tenant itself, Django's and Celery beat's tables) or are looked up before the tenant is
# known: an API key by its globally unique prefix on every request, an operator's memberships by
# user. Both are small. Every other table with a tenant_id is distributed on it.
REFERENCE_TABLES_WITH_TENANT_COLUMN = frozenset({"tenants_apikey", "tenants_tenantmembership"})


# --- migration operations -------------------------------------------------------------------------


def tenant_primary_key(table: str) -> migrations.RunSQL:
    """Make the primary key `(tenant_id, id)`. CASCADE drops the single-column foreign keys that point
    at the old key (in this app or another); the migrations that follow put back composite ones."""
    # Table and column names are constants written in migrations, never input.
    swap = f"""
DO $$
DECLARE pk text;
BEGIN
    SELECT conname INTO pk FROM pg_constraint WHERE conrelid = '{table}'::regclass AND contype = 'p';
    EXECUTE format('ALTER TABLE {table} DROP CONSTRAINT %I CASCADE', pk);
    ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY ({DISTRIBUTION_COLUMN}, id);
END $$;
"""  # noqa: S608
    back = f"""
ALTER TABLE {table} DROP CONSTRAINT {table}_pkey CASCADE;
ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (id);
"""
    return migrations.RunSQL(sql=swap, reverse_sql=back)


def drop_foreign_keys_on(table: str, column: str) -> str:
    """SQL dropping every foreign key on `table` whose columns include `column` (Django names them
    with a hash, so they are found in the catalog)."""
    return f"""
DO $$
DECLARE fk text;
BEGIN
    FOR fk IN
        SELECT c.conname FROM pg_constraint c
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey)
        WHERE c.conrelid = '{table}'::regclass AND c.contype = 'f' AND a.attname = '{column}'
    LOOP
        EXECUTE format('ALTER TABLE {table} DROP CONSTRAINT %I', fk);
    END LOOP;
END $$;
"""  # noqa: S608


def tenant_foreign_key(table: str, column: str, target: str) -> migrations.RunSQL:
    """`(tenant_id, column) -> target (tenant_id, id)`, deferred like Django's own foreign keys. No ON
    DELETE action: the code deletes (or nulls) dependents first, each statement naming its tenant, and
    this key refuses an orphan at commit. Citus refuses SET NULL and SET DEFAULT on a key that includes
    the distribution column; an ON DELETE CASCADE runs as the table's owner, so a session delete would
    remove episodes the application role may not delete."""
    name = f"{table}_{column}_tenant_fk"
    return migrations.RunSQL(
        sql=[
            drop_foreign_keys_on(table, column),
            f"ALTER TABLE {table} ADD CONSTRAINT {name} FOREIGN KEY ({DISTRIBUTION_COLUMN}, {column}) "
            f"REFERENCES {target} ({DISTRIBUTION_COLUMN}, id) DEFERRABLE INITIALLY DEFERRED",
        ],
        reverse_sql=[
            f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {name}",
        ],
    )


# --- catalog checks -------------------------------------------------------------------------------


def _rows(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


_TABLES = """
SELECT c.oid, c.relname, n.nspname,
       EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = %s
               AND a.attnum > 0 AND NOT a.attisdropped) AS has_tenant
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname = ANY (%s) AND NOT c.relispartition
"""


def _schemas(schemas: Sequence[str] | None) -> list[str]:
    if schemas is not None:
        return list(schemas)
    return ["public"]


def classify_tables(schemas: Sequence[str] | None = None) -> tuple[dict[int, str], dict[int, str]]:
    """(distributed, reference): table oid -> name. Distributed: every table with a tenant_id column
    except the reference tables named above; reference: all the others."""
    distributed: dict[int, str] = {}
    reference: dict[int, str] = {}
    for oid, name, _schema, has_tenant in _rows(_TABLES, [DISTRIBUTION_COLUMN, _schemas(schemas)]):
        target = distributed if has_tenant and name not in REFERENCE_TABLES_WITH_TENANT_COLUMN else reference
        target[int(str(oid))] = str(name)
    return distributed, reference


def check_unique_keys(schemas: Sequence[str] | None = None) -> list[str]:
    """Citus: every primary key, unique index (partial ones too) and exclusion constraint of a
    distributed table has the distribution column as a key column. House rule: it leads."""
    distributed, _ = classify_tables(schemas)
    if not distributed:
        return []
    rows = _rows(
        """
        SELECT i.indrelid, ic.relname, i.indisprimary, i.indisexclusion,
               (SELECT array_agg(a.attname ORDER BY k.ord) FROM unnest(i.indkey[0:i.indnkeyatts - 1])
                    WITH ORDINALITY AS k(attnum, ord)
                LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum)
        FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
        WHERE i.indrelid = ANY (%s) AND (i.indisunique OR i.indisexclusion)
        """,
        [list(distributed)],
    )
    out = []
    for relid, index, primary, exclusion, columns in rows:
        table = distributed[int(str(relid))]
        kind = "primary key" if primary else "exclusion constraint" if exclusion else "unique index"
        keys = list(columns or [])
        if DISTRIBUTION_COLUMN not in keys:
            out.append(
                f"{table}: {kind} {index} on ({', '.join(str(k) for k in keys)}) lacks {DISTRIBUTION_COLUMN} "
                "(Citus: every unique key of a distributed table includes the distribution column)"
            )
        elif keys[0] != DISTRIBUTION_COLUMN:
            out.append(f"{table}: {kind} {index} does not lead with {DISTRIBUTION_COLUMN} (house rule)")
    return out


def check_foreign_keys(schemas: Sequence[str] | None = None) -> list[str]:
    """Citus: a foreign key between distributed tables has the distribution column at the same position
    on both sides; a distributed table may reference a reference table; a reference table may not
    reference a distributed one; no ON DELETE SET NULL/SET DEFAULT and no ON UPDATE actions on keys
    that include the distribution column."""
    distributed, reference = classify_tables(schemas)
    tables = {**distributed, **reference}
    rows = _rows(
        """
        SELECT c.conrelid, c.confrelid, c.conname, c.confdeltype, c.confupdtype,
               (SELECT array_agg(a.attname ORDER BY k.ord) FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
                JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum),
               (SELECT array_agg(a.attname ORDER BY k.ord) FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
                JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum)
        FROM pg_constraint c WHERE c.contype = 'f' AND c.conrelid = ANY (%s)
        """,
        [list(tables)],
    )
    out = []
    for relid, frelid, name, on_delete, on_update, cols, fcols in rows:
        table = tables[int(str(relid))]
        source_distributed = int(str(relid)) in distributed
        target_distributed = int(str(frelid)) in distributed
        target = tables.get(int(str(frelid)), f"oid {frelid}")
        keys, fkeys = list(cols or []), list(fcols or [])
        if not source_distributed and target_distributed:
            out.append(f"{table}: foreign key {name} from a reference table to distributed {target} (Citus refuses it)")
        if source_distributed and target_distributed:
            if DISTRIBUTION_COLUMN not in keys or DISTRIBUTION_COLUMN not in fkeys:
                out.append(
                    f"{table}: foreign key {name} ({', '.join(map(str, keys))}) -> {target} lacks "
                    f"{DISTRIBUTION_COLUMN} (Citus: keys between distributed tables include the distribution column)"
                )
            elif keys.index(DISTRIBUTION_COLUMN) != fkeys.index(DISTRIBUTION_COLUMN):
                out.append(
                    f"{table}: foreign key {name} has {DISTRIBUTION_COLUMN} at different positions on the two "
                    "sides (Citus: same position on both sides)"
                )
        involves_distribution = source_distributed and DISTRIBUTION_COLUMN in keys
        if involves_distribution and on_delete in ("n", "d"):
            out.append(f"{table}: foreign key {name} has ON DELETE SET NULL/SET DEFAULT (Citus refuses it)")
        if involves_distribution and on_update in ("n", "d", "c"):
            out.append(f"{table}: foreign key {name} has an ON UPDATE action (Citus refuses it)")
    return out


def check_distribution_column(schemas: Sequence[str] | None = None) -> list[str]:
    """Citus: the distribution column is NOT NULL and co-located tables share its type and collation."""
    distributed, _ = classify_tables(schemas)
    if not distributed:
        return []
    rows = _rows(
        """
        SELECT a.attrelid, a.attnotnull, format_type(a.atttypid, a.atttypmod), a.attcollation
        FROM pg_attribute a WHERE a.attrelid = ANY (%s) AND a.attname = %s
        """,
        [list(distributed), DISTRIBUTION_COLUMN],
    )
    out = []
    for relid, notnull, typ, collation in rows:
        table = distributed[int(str(relid))]
        if not notnull:
            out.append(f"{table}: {DISTRIBUTION_COLUMN} is nullable (Citus: the distribution column is NOT NULL)")
        if typ != "uuid" or int(str(collation)) != 0:
            out.append(
                f"{table}: {DISTRIBUTION_COLUMN} is {typ} (collation {collation}), not uuid like tenants_tenant.id "
                "(Citus: co-located tables share the distribution column's type)"
            )
    return out


def check_generated_ids(schemas: Sequence[str] | None = None) -> list[str]:
    """Citus (11.2+) distributes tables with identity columns, but their sequences hand out values
    from every node only when the column is bigint; int and smallint identities work from the
    coordinator alone. Django's BigAutoField is bigint."""
    distributed, _ = classify_tables(schemas)
    if not distributed:
        return []
    return [
        f"{distributed[int(str(relid))]}: generated column {name} is {typ}, not bigint "
        "(Citus: identity and serial columns of distributed tables are bigint)"
        for relid, name, typ in _rows(
            """
            SELECT a.attrelid, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = ANY (%s) AND a.attnum > 0 AND NOT a.attisdropped
              AND (a.attidentity <> '' OR pg_get_expr(d.adbin, d.adrelid) LIKE 'nextval(%%')
              AND a.atttypid <> 'bigint'::regtype
            """,
            [list(distributed)],
        )
    ]


def check_triggers_and_rules(schemas: Sequence[str] | None = None) -> list[str]:
    """Citus refuses triggers on distributed and reference tables (unless citus.enable_unsafe_triggers),
    and rules are not propagated to shards. Foreign keys' internal triggers are not counted."""
    distributed, reference = classify_tables(schemas)
    tables = {**distributed, **reference}
    out = [
        f"{tables[int(str(relid))]}: trigger {name} (Citus refuses triggers on distributed and reference tables)"
        for relid, name in _rows(
            "SELECT tgrelid, tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid = ANY (%s)", [list(tables)]
        )
    ]
    out += [
        f"{tables[int(str(relid))]}: rule {name} (rules are not carried to shards)"
        for relid, name in _rows(
            "SELECT ev_class, rulename FROM pg_rewrite WHERE rulename <> '_RETURN' AND ev_class = ANY (%s)",
            [list(tables)],
        )
    ]
    return out


def check_row_level_security(schemas: Sequence[str] | None = None) -> list[str]:
    """Every table with a tenant_id (distributed or reference) has row-level security enabled and
    forced and at least one policy; no policy contains a subquery (Citus refuses those)."""
    tenant_tables = {
        int(str(oid)): str(name)
        for oid, name, _schema, has_tenant in _rows(_TABLES, [DISTRIBUTION_COLUMN, _schemas(schemas)])
        if has_tenant
    }
    if not tenant_tables:
        return []
    out = []
    for relid, enabled, forced, policies in _rows(
        """
        SELECT c.oid, c.relrowsecurity, c.relforcerowsecurity,
               (SELECT count(*) FROM pg_policy p WHERE p.polrelid = c.oid)
        FROM pg_class c WHERE c.oid = ANY (%s)
        """,
        [list(tenant_tables)],
    ):
        table = tenant_tables[int(str(relid))]
        if not enabled or not forced:
            out.append(f"{table}: row-level security is not enabled and forced (house rule: every tenant table)")
        if not policies:
            out.append(f"{table}: no row-level security policy (house rule: every tenant table)")
    for relid, name in _rows(
        """
        SELECT polrelid, polname FROM pg_policy WHERE polrelid = ANY (%s)
          AND (coalesce(polqual::text, '') LIKE '%%{SUBLINK%%' OR coalesce(polwithcheck::text, '') LIKE '%%{SUBLINK%%')
        """,
        [list(tenant_tables)],
    ):
        out.append(f"{tenant_tables[int(str(relid))]}: policy {name} contains a subquery (Citus refuses it)")
    return out


CHECKS = (
    check_unique_keys,
    check_foreign_keys,
    check_distribution_column,
    check_generated_ids,
    check_triggers_and_rules,
    check_row_level_security,
)


def citus_violations(schemas: Sequence[str] | None = None) -> list[str]:
    return [message for check in CHECKS for message in check(schemas)]

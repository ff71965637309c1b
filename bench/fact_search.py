"""Benchmark of POST /v1/facts/search at scale: a tenant holding --tenant-facts facts in a table of
--total, in a scratch database of its own (default engram_bench) so that nobody else is disturbed.

    .venv/bin/python bench/fact_search.py                        # full size: 100,000 of 1,000,000
    .venv/bin/python bench/fact_search.py --total 300000         # what fits in ~10 minutes on 2 cores

Stages (each skipped when already done, so the data is built once and reused):
1. create the database as the owner (DATABASE_OWNER_URL) and migrate it;
2. generate the facts in SQL (random unit vectors, statements from a small vocabulary), the big
   tenant's, one with 1% of the table, and filler tenants; build the HNSW index once, after the load;
3. measure, as the application role (row-level security in force), per scenario:
   - db: the database part of the search (set_config of the scan + the one search statement);
   - selector: fact_search with a given query embedding (db + fusion in Python);
   - http: the whole POST /v1/facts/search, query embedded with MiniLM (first scenario only);
   - recall@k of the vector part against an exact scan.
Prints a table and writes docs/benchmarks/semantic.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WORDS = (
    "database postgres mysql redis kafka billing invoice plan enterprise login timeout export csv dashboard "
    "latency region europe python django react mobile android email slack webhook api key token backup "
    "restore migration schema index vector search ranking cache queue worker celery cron deploy docker "
    "kubernetes terraform aws gcp azure monitoring alert incident support ticket refund"
).split()
NOISE = 0.15
CENTROIDS: list[list[float]] = []
CATEGORIES = ("preferences", "technical_environment", "known_issues", "contact_info", "business_context", "other")


def _with_db(url: str, name: str) -> str:
    parts = urlparse(url)
    return urlunparse(parts._replace(path=f"/{name}"))


def _owner_url() -> str:
    url = os.environ.get("DATABASE_OWNER_URL")
    if not url:
        sys.exit("DATABASE_OWNER_URL is not set: run `set -a && . .data/engram.env && set +a` first.")
    return url


def prepare(args: argparse.Namespace) -> None:
    import psycopg

    owner = _owner_url()
    with psycopg.connect(_with_db(owner, "postgres"), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [args.db]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{args.db}"')
            print(f"created database {args.db}")
    env = {
        **os.environ,
        "DATABASE_URL": _with_db(os.environ["DATABASE_URL"], args.db),
        "DATABASE_OWNER_URL": _with_db(owner, args.db),
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True)


def _insert_sql(words: list[str]) -> str:
    word_array = "(ARRAY[" + ",".join(f"'{w}'" for w in words) + "])"
    cat_array = "(ARRAY[" + ",".join(f"'{c}'" for c in CATEGORIES) + "])"
    n = len(words)
    return f"""
    INSERT INTO semantic_fact (id, tenant_id, subject, entity, attribute, value, value_key, statement, category,
        cardinality, confidence, status, valid_from, recorded_at, last_confirmed_at, use_count,
        confirmation_count, origin, embedding, updated_at)
    SELECT gen_random_uuid(), %(tenant)s::uuid, 'user-' || (g %% 1000), 'user-' || (g %% 1000), 'attr_' || g,
        'value ' || g, 'value ' || g,
        'The user ' || {word_array}[1 + (g * 7) %% {n}] || ' ' || {word_array}[1 + (g * 13) %% {n}] || ' '
            || {word_array}[1 + (g * 31) %% {n}] || ' note ' || g,
        {cat_array}[1 + g %% 6], 'single', 0.5 + (g %% 50) / 100.0, 'active',
        now() - ((g %% 365) || ' days')::interval, now(), now() - ((g %% 90) || ' days')::interval, 0, 1, 'api',
        l2_normalize(c.v + (SELECT array_agg((random()::real - 0.5) * %(noise)s) FROM generate_series(1, 384)
            WHERE g IS NOT NULL)::vector),
        now()
    FROM generate_series(%(start)s::int, %(stop)s::int) AS g
    JOIN bench_centroid c ON c.i = (g * 7919) %% %(clusters)s
    """


def generate(args: argparse.Namespace) -> dict[str, str]:
    import psycopg

    url = _with_db(_owner_url(), args.db)
    small = max(1, args.total // 100)
    fillers = max(0, args.total - args.tenant_facts - small)
    plan = [("bench-big", args.tenant_facts), ("bench-small", small)]
    per_filler = 100_000
    for i in range((fillers + per_filler - 1) // per_filler):
        plan.append((f"bench-filler-{i}", min(per_filler, fillers - i * per_filler)))
    ids: dict[str, str] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for slug, _ in plan:
            row = conn.execute("SELECT id FROM tenants_tenant WHERE slug = %s", [slug]).fetchone()
            if row is None:
                row = conn.execute(
                    "INSERT INTO tenants_tenant (id, name, slug, active, settings, created_at) "
                    "VALUES (gen_random_uuid(), %s, %s, true, '{}', now()) RETURNING id",
                    [slug, slug],
                ).fetchone()
            assert row is not None
            ids[slug] = str(row[0])
        # Embeddings of real text cluster by topic; uniformly random 384-dimensional vectors are all
        # nearly equidistant, which no approximate index navigates well. Facts are drawn around
        # --clusters random centroids (cosine to their centroid about 0.75).
        conn.execute("CREATE TABLE IF NOT EXISTS bench_centroid (i int PRIMARY KEY, v vector(384))")
        if conn.execute("SELECT count(*) FROM bench_centroid").fetchone() != (args.clusters,):
            conn.execute("TRUNCATE bench_centroid")
            conn.execute(
                "INSERT INTO bench_centroid SELECT i, l2_normalize((SELECT array_agg(random()::real - 0.5) "
                "FROM generate_series(1, 384) WHERE i IS NOT NULL)::vector) FROM generate_series(0, %s - 1) AS i",
                [args.clusters],
            )
        counts = dict(conn.execute("SELECT tenant_id::text, count(*) FROM semantic_fact GROUP BY 1").fetchall())
        todo = [(slug, n) for slug, n in plan if counts.get(ids[slug], 0) != n]
        if todo:
            conn.execute("DROP INDEX IF EXISTS fact_embedding_hnsw")
            sql = _insert_sql(WORDS)
            for slug, n in todo:
                conn.execute("DELETE FROM semantic_fact WHERE tenant_id = %s", [ids[slug]])
                started = time.perf_counter()
                for start in range(1, n + 1, 50_000):
                    conn.execute(
                        sql,
                        {
                            "tenant": ids[slug],
                            "start": start,
                            "stop": min(n, start + 49_999),
                            "noise": NOISE,
                            "clusters": args.clusters,
                        },
                    )
                print(f"loaded {n:,} facts for {slug} in {time.perf_counter() - started:.0f} s", flush=True)
        has_index = conn.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'fact_embedding_hnsw'").fetchone()
        if not has_index:
            conn.execute(f"SET maintenance_work_mem = '{args.maintenance_work_mem}'")
            conn.execute(f"SET max_parallel_maintenance_workers = {args.build_workers}")
            started = time.perf_counter()
            conn.execute(
                "CREATE INDEX fact_embedding_hnsw ON semantic_fact USING hnsw (embedding vector_cosine_ops) "
                "WITH (m = 16, ef_construction = 64)"
            )
            print(f"built the HNSW index in {time.perf_counter() - started:.0f} s", flush=True)
            conn.execute("VACUUM ANALYZE semantic_fact")
        total = conn.execute("SELECT count(*) FROM semantic_fact").fetchone()
        centroids = [
            [float(x) for x in v.strip("[]").split(",")]
            for (v,) in conn.execute("SELECT v::text FROM bench_centroid ORDER BY i").fetchall()
        ]
        sizes = conn.execute(
            "SELECT pg_size_pretty(pg_table_size('semantic_fact')), "
            "pg_size_pretty(pg_relation_size('fact_embedding_hnsw'))"
        ).fetchone()
    assert total is not None and sizes is not None
    ids["_total"] = str(total[0])
    CENTROIDS[:] = centroids
    ids["_sizes"] = f"table {sizes[0]}, HNSW index {sizes[1]}"
    return ids


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def measure(args: argparse.Namespace, ids: dict[str, str]) -> list[dict[str, object]]:
    os.environ["DATABASE_URL"] = _with_db(os.environ["DATABASE_URL"], args.db)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ["ENGRAM_EMBEDDER"] = "core.embedding.MiniLMEmbedder"
    import django

    django.setup()
    import numpy as np
    from django.db import connection
    from rest_framework.test import APIClient

    from core.embedding import get_embedder
    from semantic import selectors
    from semantic.selectors import configure_vector_scan, fact_search, search_sql

    if args.ef_search is not None:
        selectors.HNSW_EF_SEARCH = args.ef_search
    from tenants.models import Tenant
    from tenants.scope import tenant_scope
    from tenants.services import api_key_create

    rng = np.random.default_rng(args.seed)
    big = Tenant.objects.get(id=ids["bench-big"])
    small = Tenant.objects.get(id=ids["bench-small"])
    scenarios = [
        ("big tenant, no filter", big, {}),
        ("big tenant, category filter", big, {"category": "known_issues"}),
        ("big tenant, entity filter", big, {"entity": "user-42"}),
        ("tenant with 1% of rows", small, {}),
    ]
    pool = max(4 * args.k, 40)
    rows: list[dict[str, object]] = []
    for label, tenant, filters in scenarios:
        db_ms: list[float] = []
        sel_ms: list[float] = []
        recalls: list[float] = []
        returned: list[int] = []
        for i in range(args.queries + args.warmup):
            centre = np.asarray(CENTROIDS[int(rng.integers(len(CENTROIDS)))], dtype=np.float32)
            vector = centre + (rng.random(384, dtype=np.float32) - 0.5) * NOISE
            vector = (vector / np.linalg.norm(vector)).tolist()
            words = rng.choice(WORDS, size=2, replace=False)
            query = f"{words[0]} {words[1]}"
            statement = search_sql(
                tenant=tenant,
                query=query,
                vector=vector,
                pool=pool,
                subject=None,
                entity=filters.get("entity"),
                category=filters.get("category"),
                as_of=None,
            )
            with tenant_scope(tenant):
                started = time.perf_counter()
                configure_vector_scan(ef_search=pool)
                with connection.cursor() as cursor:
                    cursor.execute(statement.sql, statement.params)
                    fetched = cursor.fetchall()
                elapsed_db = (time.perf_counter() - started) * 1000
            with tenant_scope(tenant):
                started = time.perf_counter()
                results = fact_search(tenant=tenant, query=query, query_embedding=vector, k=args.k, **filters)
                elapsed_sel = (time.perf_counter() - started) * 1000
            if i < args.warmup:
                continue
            db_ms.append(elapsed_db)
            sel_ms.append(elapsed_sel)
            returned.append(len(results))
            assert fetched is not None
            if i - args.warmup < args.recall_queries:
                recalls.append(_recall(connection, tenant, vector, filters, pool, args.k))
        rows.append(
            {
                "scenario": label,
                "db_p50": statistics.median(db_ms),
                "db_p95": _pct(db_ms, 0.95),
                "sel_p50": statistics.median(sel_ms),
                "sel_p95": _pct(sel_ms, 0.95),
                "recall": statistics.mean(recalls),
                "returned": min(returned),
            }
        )
        print(f"measured {label}", flush=True)

    # The whole request, with the query embedded by MiniLM inside it.
    get_embedder.cache_clear()
    issued = api_key_create(tenant=big, name="bench", scopes=("read", "write"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    http_ms: list[float] = []
    for i in range(args.queries + args.warmup):
        words = rng.choice(WORDS, size=3, replace=False)
        started = time.perf_counter()
        response = client.post("/v1/facts/search", {"query": " ".join(words), "k": args.k}, format="json")
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, response.content[:300]
        if i >= args.warmup:
            http_ms.append(elapsed)
    rows.append(
        {
            "scenario": "POST /v1/facts/search, big tenant (MiniLM query embedding included)",
            "http_p50": statistics.median(http_ms),
            "http_p95": _pct(http_ms, 0.95),
        }
    )
    return rows


def _recall(connection, tenant, vector, filters, pool: int, k: int) -> float:  # type: ignore[no-untyped-def]
    """Top k of the vector part (as fact_search runs it) against an exact scan of the same rows."""
    from semantic.selectors import configure_vector_scan
    from tenants.scope import tenant_scope

    where = "tenant_id = %s AND status = 'active' AND embedding IS NOT NULL"
    params: list[object] = [tenant.id]
    for column in ("entity", "category"):
        if filters.get(column):
            where += f" AND {column} = %s"
            params.append(filters[column])
    literal = "[" + ",".join(repr(x) for x in vector) + "]"
    sql = (
        f"SELECT id, embedding <=> %s::vector FROM semantic_fact WHERE {where} "
        "ORDER BY embedding <=> %s::vector LIMIT %s"
    )
    with tenant_scope(tenant), connection.cursor() as cursor:
        configure_vector_scan(ef_search=pool)
        cursor.execute(sql, [literal, *params, literal, pool])
        approx = {r[0] for r in sorted(cursor.fetchall(), key=lambda r: r[1])[:k]}
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_indexscan = off")
        cursor.execute(sql, [literal, *params, literal, k])
        exact = {r[0] for r in cursor.fetchall()}
    return len(approx & exact) / max(1, len(exact))


def report(args: argparse.Namespace, ids: dict[str, str], rows: list[dict[str, object]], command: str) -> str:
    lines = [
        "| scenario | db p50 ms | db p95 ms | selector p50 ms | selector p95 ms | recall@k | min rows returned |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if "http_p50" in r:
            continue
        lines.append(
            f"| {r['scenario']} | {r['db_p50']:.1f} | {r['db_p95']:.1f} | {r['sel_p50']:.1f} | {r['sel_p95']:.1f} "
            f"| {r['recall']:.3f} | {r['returned']} |"
        )
    http = [r for r in rows if "http_p50" in r]
    table = "\n".join(lines)
    if http:
        table += (
            f"\n\n| request | p50 ms | p95 ms |\n|---|---|---|\n| {http[0]['scenario']} | "
            f"{http[0]['http_p50']:.1f} | {http[0]['http_p95']:.1f} |"
        )
    header = (
        f"facts in table: {int(ids['_total']):,}; big tenant: {args.tenant_facts:,}; "
        f"1% tenant: {max(1, args.total // 100):,}; {ids['_sizes']}; k={args.k}; "
        f"hnsw.ef_search={args.ef_search_used}, iterative_scan=relaxed_order; "
        f"vectors around {args.clusters} random centroids; "
        f"{args.queries} queries per scenario after {args.warmup} warm-up; recall over {args.recall_queries}."
    )
    return f"{header}\n\n{table}\n\nCommand: `{command}`\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_bench")
    parser.add_argument("--total", type=int, default=1_000_000)
    parser.add_argument("--tenant-facts", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--recall-queries", type=int, default=50)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--maintenance-work-mem", default="3GB")
    parser.add_argument("--build-workers", type=int, default=1)
    parser.add_argument("--ef-search", type=int, default=None, help="override semantic.selectors.HNSW_EF_SEARCH")
    parser.add_argument("--out", default=str(ROOT / "docs" / "benchmarks" / "semantic.md"))
    args = parser.parse_args()
    command = ".venv/bin/python bench/fact_search.py " + " ".join(sys.argv[1:])
    prepare(args)
    ids = generate(args)
    rows = measure(args, ids)
    from semantic import selectors

    args.ef_search_used = selectors.HNSW_EF_SEARCH
    body = report(args, ids, rows, command.strip())
    print(body)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    existing = out.read_text() if out.exists() else ""
    marker = "<!-- bench/fact_search.py results -->"
    intro = existing.split(marker)[0] if marker in existing else "# Semantic memory benchmarks\n\n"
    out.write_text(f"{intro}{marker}\n\n{body}")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

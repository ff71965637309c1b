"""Admin lists and dashboard pages on a large tenant: latency (median, p95) and queries per page.

A database of its own (bench_engram_admin, created as the owner, used as the application role so
row-level security is in force) holds a tenant with EPISODES episodes in EPISODES/10 sessions,
EPISODES/10 facts (2% pending review) with their changes, traces with feedback and consolidation
runs, next to a small second tenant. Each page is requested by a staff operator of the big tenant
through Django's test client (middleware, tenant scope, templates: everything but the socket).

    .venv/bin/python bench/admin_lists.py [--episodes 200000] [--runs 15] [--keep]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")
os.environ["ENGRAM_TEST_DB_NAME"] = os.environ.get("ENGRAM_BENCH_DB_NAME", "bench_engram_admin")
os.environ.setdefault("TEST_REDIS_URL", "redis://127.0.0.1:6379/15")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.utils import timezone  # noqa: E402

SUBJECTS = 2000


def populate(tenant, episodes: int) -> None:  # type: ignore[no-untyped-def]
    from consolidation.models import ConsolidationRun
    from router.models import ContextFeedback, ContextTrace
    from semantic.models import Fact, FactChange
    from semantic.normalise import value_key
    from tenants.scope import tenant_scope

    sessions = episodes // 10
    now = timezone.now()
    with tenant_scope(tenant), connection.cursor() as cur:
        cur.execute(
            """
            INSERT INTO episodic_session (tenant_id, external_id, subject, agent, status, started_at, ended_at,
                last_event_at, outcome, outcome_signal, summary, episode_count, created_at)
            SELECT %s, 's-' || g, 'user-' || (g %% %s), '', 'ended', now() - (g || ' minutes')::interval,
                now() - (g || ' minutes')::interval + interval '10 minutes', now() - (g || ' minutes')::interval,
                (ARRAY['success', 'failure', 'unknown'])[1 + g %% 3], NULL, '', 10, now()
            FROM generate_series(1, %s) g
            """,
            [tenant.id, SUBJECTS, sessions],
        )
        cur.execute(
            """
            INSERT INTO episodic_episode (tenant_id, session_id, subject, agent, kind, role, content, payload,
                entities, topics, occurred_at, created_at, external_id, token_count, content_hash, outcome,
                outcome_signal, embedding)
            SELECT s.tenant_id, s.id, s.subject, '', 'message', CASE WHEN g %% 2 = 0 THEN 'user' ELSE 'assistant' END,
                'message ' || g || ' about ' || (ARRAY['billing', 'deploys', 'refunds', 'login', 'invoices'])[1 + g %% 5],
                '{}'::jsonb, ARRAY[(ARRAY['stripe', 'github', 'okta'])[1 + g %% 3]]::varchar[], ARRAY[]::varchar[],
                s.started_at + ((g %% 10) || ' seconds')::interval, s.started_at + ((g %% 10) || ' seconds')::interval,
                NULL, 8, md5(g::text), NULL, NULL, NULL
            FROM generate_series(1, %s) g
            JOIN episodic_session s ON s.tenant_id = %s AND s.external_id = 's-' || (1 + (g - 1) / 10)
            """,
            [episodes, tenant.id],
        )
        facts = []
        for i in range(sessions):
            value = f"value {i}"
            facts.append(
                Fact(
                    tenant=tenant,
                    subject=f"user-{i % SUBJECTS}",
                    entity=f"user-{i % SUBJECTS}",
                    attribute=f"attribute_{i}",
                    value=value,
                    value_key=value_key(value),
                    statement=f"user-{i % SUBJECTS} attribute {i} is {value} ({['billing', 'deploys', 'login'][i % 3]}).",
                    status="pending_review" if i % 50 == 0 else "active",
                    confidence=0.3 if i % 50 == 0 else 0.8,
                    recorded_at=now - timedelta(minutes=i),
                )
            )
        Fact.objects.bulk_create(facts, batch_size=2000)
        changes = [
            FactChange(
                tenant=tenant,
                fact=f,
                kind=kind,
                new_value=f.value,
                reason="bench",
                actor_type="consolidation",
                created_at=f.recorded_at,
            )
            for i, f in enumerate(facts)
            for kind in (("created", "superseded") if i % 5 == 0 else ("created",))
        ]
        FactChange.objects.bulk_create(changes, batch_size=2000)
        traces = [
            ContextTrace(
                tenant=tenant,
                subject=f"user-{i % SUBJECTS}",
                session=f"s-{i + 1}",
                policy="heuristic",
                offered_ids=[f"fact:{k}" for k in range(6)],
                created_at=now - timedelta(minutes=i),
            )
            for i in range(sessions)
        ]
        ContextTrace.objects.bulk_create(traces, batch_size=2000)
        ContextFeedback.objects.bulk_create(
            [
                ContextFeedback(
                    tenant=tenant,
                    trace=t,
                    subject=t.subject,
                    session=t.session,
                    offered_count=6,
                    used_count=i % 7,
                    outcome="success",
                    created_at=t.created_at,
                )
                for i, t in enumerate(traces)
            ],
            batch_size=2000,
        )
        ConsolidationRun.objects.bulk_create(
            [
                ConsolidationRun(
                    tenant=tenant,
                    trigger=["session_ended", "sweep", "entity_threshold"][i % 3],
                    subject=f"user-{i % SUBJECTS}",
                    session_external_id=f"s-{i + 1}",
                    status="succeeded",
                    episodes_read=10,
                    facts_created=i % 3,
                    created_at=now - timedelta(minutes=10 * i),
                )
                for i in range(sessions // 5)
            ],
            batch_size=2000,
        )
        cur.execute("ANALYZE")


def measure(client: Client, url: str, runs: int) -> tuple[float, float, int]:
    for _ in range(2):
        assert client.get(url).status_code == 200, url
    times = []
    queries = 0

    def count(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        nonlocal queries
        queries += 1
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        client.get(url)
    for _ in range(runs):
        start = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, url
    p95 = statistics.quantiles(times, n=20)[18] if len(times) >= 2 else times[0]
    return statistics.median(times), p95, queries


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--keep", action="store_true", help="keep the database for the next run")
    args = parser.parse_args()

    from django.contrib.auth import get_user_model

    from tenants.dbroles import switch_connection_user
    from tenants.models import Tenant
    from tenants.services import membership_add, tenant_create
    from tests.factories.admin import build_memory, make_operator

    old_name = settings.DATABASES["default"]["NAME"]
    owner = (settings.DATABASES["default"]["USER"], settings.DATABASES["default"]["PASSWORD"])
    started = time.perf_counter()
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=args.keep)
    switch_connection_user("default", *settings.ENGRAM_TEST_APP_CREDENTIALS)
    try:
        tenant = Tenant.objects.filter(slug="bench").first()
        if tenant is None:
            tenant = tenant_create(name="Bench", slug="bench")
            other = tenant_create(name="Other", slug="other")
            build_memory(other, subject="someone-else", prefix="o-")
            build_memory(tenant, subject="user-7", prefix="m-")
            populate(tenant, args.episodes)
            make_operator("bench-operator", tenant)
        built = time.perf_counter() - started
        operator = get_user_model().objects.get(username="bench-operator")
        membership_add(tenant=tenant, user=operator)
        client = Client()
        client.force_login(operator)
        from episodic.models import Episode
        from semantic.models import Fact
        from tenants.scope import tenant_scope

        with tenant_scope(tenant):
            fact_id = Fact.objects.filter(subject="user-7").values_list("id", flat=True).first()
            counts = {"episodes": Episode.objects.count(), "facts": Fact.objects.count()}
        pages = [
            ("facts", "/admin/semantic/fact/"),
            ("facts, pending", "/admin/semantic/fact/?status__exact=pending_review"),
            ("facts, full-text search", "/admin/semantic/fact/?q=deploys"),
            ("facts, by entity", "/admin/semantic/fact/?entity=user-7"),
            ("fact change page", f"/admin/semantic/fact/{fact_id}/change/"),
            ("review queue", "/admin/semantic/fact/review/"),
            ("conflict audit", "/admin/semantic/factchange/"),
            ("conflict audit, superseded", "/admin/semantic/factchange/?kind__exact=superseded"),
            ("conflict audit, by entity", "/admin/semantic/factchange/?entity=user-7"),
            ("episodes", "/admin/episodic/episode/"),
            ("episodes, full-text search", "/admin/episodic/episode/?q=refunds"),
            ("episodes, by subject", "/admin/episodic/episode/?subject=user-7"),
            ("episodes, by session", "/admin/episodic/episode/?session=s-77"),
            ("sessions", "/admin/episodic/session/"),
            ("context traces", "/admin/router/contexttrace/"),
            ("consolidation runs", "/admin/consolidation/consolidationrun/"),
            ("dashboard, tenant", "/dashboard/bench/"),
            ("dashboard, subject", "/dashboard/bench/subjects/user-7/"),
        ]
        rows = [(name, url, *measure(client, url, args.runs)) for name, url in pages]
    finally:
        switch_connection_user("default", *owner)
        if not args.keep:
            connection.creation.destroy_test_db(old_name, verbosity=0)

    header = f"{'page':32} {'median ms':>10} {'p95 ms':>8} {'queries':>8}"
    lines = [header, "-" * len(header)] + [f"{n:32} {m:10.1f} {p:8.1f} {q:8d}" for n, _, m, p, q in rows]
    print("\n".join(lines))
    md = [
        "# Admin lists and dashboard on a large tenant",
        "",
        f"Tenant with {counts['episodes']:,} episodes in {args.episodes // 10:,} sessions, {counts['facts']:,} facts "
        f"(2% pending review) with their changes, {args.episodes // 10:,} traces with feedback, "
        f"{args.episodes // 50:,} consolidation runs; a second tenant beside it; row-level security in force "
        "(application role). A staff operator of the tenant requests each page through Django's test client "
        f"(middleware, tenant scope, admin, templates; no socket): 2 warm-up requests, then {args.runs} timed. "
        f"Embedded PostgreSQL 18 with pgvector, 2 cores shared with other work while measured. Data built in {built:.0f} s.",
        "",
        "| page | URL | median ms | p95 ms | queries |",
        "|---|---|---:|---:|---:|",
        *[f"| {n} | `{u}` | {m:.1f} | {p:.1f} | {q} |" for n, u, m, p, q in rows],
        "",
        "Command:",
        "",
        "```sh",
        f".venv/bin/python bench/admin_lists.py --episodes {args.episodes} --runs {args.runs}",
        "```",
        "",
    ]
    out = ROOT / "docs" / "benchmarks" / "admin-lists.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(md))
    print(f"\nwritten to {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""Where a context request's time goes, in process, on the data of bench/context_latency.py.

    .venv/bin/python bench/context_breakdown.py --db engram_bench_router_full --episodes 1000000 --facts 100000

Calls router.services.context_build directly (no HTTP), as the application role with row-level security
and the same helper threads as the web process, for two kinds of request in alternating turns:
- "new query": the query is embedded on the request path, as in bench/context_latency.py;
- "query vector cached": the query's vector is put in the embedding cache before the clock starts (what
  an agent asking again with the same words gets): everything the request does but the model call.
For each it reports the wall time and the CPU spent per request by this process (all its threads:
the request, the readers, the trace writer, torch) and by PostgreSQL (all its processes, from /proc);
for the new queries, the time of each kind of statement on each thread (an execute wrapper on every
connection).
The data must have been built by bench/context_latency.py with the same size arguments.
Prints a table and writes docs/benchmarks/context_breakdown.md.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import statistics
import sys
import threading
import time
import timeit
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_latency import (  # noqa: E402
    ROOT,
    _db_env,
    _env,
    _scalar,
    _sentence,
    _size,
    _with_db,
    add_data_arguments,
    prewarm,
)

sys.path.insert(0, str(ROOT))
from core.cpu import postgres_cpu_seconds  # noqa: E402

CASES = ("new query", "query vector cached")

# What a statement of a context request is, told by a phrase of its SQL (checked in this order); a
# statement that none names counts as "other", so that a change of the SQL shows in the table.
STATEMENTS = (
    ("WITH v AS (", "facts: vector part, union and measures"),
    ("ts_rank(search_vector", "facts: text part"),
    ("ts_rank(p.search_vector", "episodes: final fetch of the ranked rows"),
    ("semantic_factsource", "facts: sources"),
    ("SELECT m.id FROM", "episodes: text and overlap channels"),
    ('"embedding" <=>', "episodes: vector channel"),
    ("embedding <=> (SELECT v FROM q)", "episodes: vector channel"),
    ("ts_rank(e.search_vector", "episodes: final fetch of the ranked rows"),
    ("h.anchor", "episodes: neighbouring turns"),
    ("e.payload", "episodes: recent events of the session"),
    ("episodic_session", "episodes: session summaries"),
    ("procedural_procedure", "procedures"),
    ('INSERT INTO "router_contexttrace"', "trace row"),
    ('UPDATE "router_contexttrace"', "trace items (after the commit)"),
    ("set_config", "settings (tenant scope, vector scan, commit)"),
    ("SET LOCAL", "settings (tenant scope, vector scan, commit)"),
    ("SAVEPOINT", "savepoints"),
)
THREADS = {"MainThread": "request", "engram-read": "reader", "engram-writ": "writer"}


class StatementTimer:
    """An execute wrapper (installed on every connection) that adds up the wall time of each kind of
    statement, per thread, while `on` is set."""

    def __init__(self) -> None:
        self.on = False
        self.lock = threading.Lock()
        self.totals: dict[tuple[str, str], list[float]] = {}

    def __call__(self, execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if not self.on:
            return execute(sql, params, many, context)
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            kind = next((name for phrase, name in STATEMENTS if phrase in sql), "other")
            thread = THREADS.get(threading.current_thread().name[:11], "other")
            with self.lock:
                self.totals.setdefault((kind, thread), [0.0, 0])
                self.totals[(kind, thread)][0] += elapsed
                self.totals[(kind, thread)][1] += 1


def _check_data(args: argparse.Namespace) -> None:
    import psycopg

    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), args.db)) as conn:
        row = conn.execute("SELECT settings FROM tenants_tenant WHERE slug = 'bench-big'").fetchone()
    if row is None or row[0].get("bench_size") != _size(args):
        sys.exit(f"{args.db} does not hold data of this size: run bench/context_latency.py --build-only first.")


def request_maker(args: argparse.Namespace) -> Callable[[int], Any]:
    """The benchmark's requests, the same sequence in every run (Django set up): a subject and one of
    its sessions, a question of 2 to 6 words of the data's vocabulary."""
    from router.types import ContextRequest

    rng = random.Random(13)

    def body(i: int) -> ContextRequest:
        subject = f"user-{rng.randrange(args.subjects)}"
        return ContextRequest(
            subject=subject,
            session=f"{subject}-s{rng.randrange(args.sessions_per_subject)}",
            query=f"what did we say about {_sentence(rng, rng.randint(2, 6))} ({i})?",
            max_tokens=args.max_tokens,
        )

    return body


def measure(args: argparse.Namespace, timer: StatementTimer) -> dict[str, dict[str, float]]:
    os.environ.update({**_db_env(args.db), "DJANGO_DEBUG": "false", "ENGRAM_TORCH_THREADS": "1"})
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db.backends.signals import connection_created

    # Every thread's connection as it connects, this one's and the helpers' (they connect on first use).
    connection_created.connect(
        lambda sender, connection, **kwargs: connection.execute_wrappers.append(timer), weak=False
    )
    from core.embedding import embed_one
    from router.services import context_build
    from router.types import ContextRequest
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    tenant = Tenant.objects.get(slug="bench-big")
    body = request_maker(args)

    def run(request: ContextRequest) -> tuple[float, float, float | None]:
        pg_before, cpu_before = postgres_cpu_seconds(), time.process_time()
        started = time.perf_counter()
        with tenant_scope(tenant):
            context_build(tenant=tenant, request=request)
        wall = (time.perf_counter() - started) * 1000
        cpu = (time.process_time() - cpu_before) * 1000
        pg_after = postgres_cpu_seconds()
        pg = (pg_after - pg_before) * 1000 if pg_after is not None and pg_before is not None else None
        return wall, cpu, pg

    for i in range(20):  # the model traced, connections open, helper threads started
        run(body(-1 - i))
    samples: dict[str, list[tuple[float, float, float | None]]] = {case: [] for case in CASES}
    for i in range(args.requests):
        fresh, cached = body(2 * i), body(2 * i + 1)
        embed_one(cached.query)
        # The two kinds take turns at going first, so that neither always follows the other's trace write.
        order = [("new query", fresh), ("query vector cached", cached)]
        for case, request in order if i % 2 == 0 else reversed(order):
            # Statements are timed for the new queries: the requests as served.
            timer.on = case == "new query"
            samples[case].append(run(request))
            timer.on = False
    out: dict[str, dict[str, float]] = {}
    for case, values in samples.items():
        walls = sorted(v[0] for v in values)
        pgs = [v[2] for v in values if v[2] is not None]
        out[case] = {
            "n": len(walls),
            "p50": statistics.median(walls),
            "p95": walls[min(len(walls) - 1, int(0.95 * len(walls)))],
            "p99": walls[min(len(walls) - 1, int(0.99 * len(walls)))],
            "cpu_process": statistics.median(v[1] for v in values),
            "cpu_postgres": statistics.fmean(pgs) if pgs else float("nan"),
        }
    return out


def report(
    args: argparse.Namespace, results: dict[str, dict[str, float]], timer: StatementTimer, command: str, loop_ms: float
) -> str:
    import psycopg

    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), args.db)) as conn:
        buffers = _scalar(conn, "SHOW shared_buffers")
    lines = [
        "# Where a context request's time goes (in process)",
        "",
        f"Produced by `{command}` on {datetime.now(UTC):%Y-%m-%d}, 2 CPU cores, shared_buffers {buffers}, "
        f"tables prewarmed. The reference loop (`sum(i*i for i in range(1000000))`) took {loop_ms:.0f} ms "
        "at the start of the run: this machine's speed swings by up to 2x within a day.",
        "",
        f"Data of bench/context_latency.py: {args.episodes:,} episodes and {args.facts:,} facts over "
        f"{args.subjects} subjects in a database of {args.tenants} tenants; max_tokens {args.max_tokens}. "
        "`router.services.context_build` called directly, as the application role with row-level security "
        "and the web process's helper threads; the two kinds of request take turns. CPU per request: this "
        "process (all its threads, median) and PostgreSQL (all its processes, mean).",
        "",
        "| request | requests | p50 ms | p95 ms | p99 ms | CPU this process ms | CPU PostgreSQL ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for case in CASES:
        st = results[case]
        lines.append(f"| {case} | {st['n']:.0f} | {st['p50']:.1f} | {st['p95']:.1f} | {st['p99']:.1f} | "
                     f"{st['cpu_process']:.1f} | {st['cpu_postgres']:.1f} |")  # fmt: skip
    fresh, cached = results["new query"], results["query vector cached"]
    lines += [
        "",
        f"The model call on the request path costs {fresh['p50'] - cached['p50']:.1f} ms of the median and "
        f"{fresh['cpu_process'] - cached['cpu_process']:.1f} ms of CPU. Without it, a request still takes "
        f"{cached['cpu_process'] + cached['cpu_postgres']:.0f} ms of CPU: on 2 cores no less than "
        f"{(cached['cpu_process'] + cached['cpu_postgres']) / 2:.0f} ms of wall time even if all of it overlapped, "
        "before the HTTP layer (docs/benchmarks/context_latency.md).",
        "",
        "The statements of the new-query requests, by kind and by the thread that ran them (the request's, the "
        "reader beside it, the trace writer after the commit): wall time from the client's side of the "
        "connection, so a statement that waits for a core or for the interpreter lock counts that wait. The "
        "request and the reader run at once; the writer's are those that ran during a new-query request (the trace "
        "items of the request before it).",
        "",
        "| statement | thread | ms per request | statements per request |",
        "|---|---|---:|---:|",
    ]
    n = results["new query"]["n"]
    for (kind, thread), (total, count) in sorted(timer.totals.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"| {kind} | {thread} | {total / n:.2f} | {count / n:.1f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser)
    parser.add_argument("--requests", type=int, default=200, help="requests of each kind")
    parser.add_argument("--max-tokens", type=int, default=4000)
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks" / "context_breakdown.md"))
    args = parser.parse_args()
    command = ("bench/context_breakdown.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])).strip()
    _check_data(args)
    prewarm(args.db)
    loop_ms = min(timeit.repeat("sum(i*i for i in range(1000000))", number=1, repeat=5)) * 1000
    timer = StatementTimer()
    results = measure(args, timer)
    text = report(args, results, timer, command, loop_ms)
    Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

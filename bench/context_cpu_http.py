"""Service CPU per context request, paid the way users pay it: over HTTP, on an evaluation's tenant.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/context_cpu_http.py --db engram_locomo_r4 --set locomo
    .venv/bin/python bench/context_cpu_http.py --db engram_techchat_r4 --set techchat

The tenant is the one an evaluation left in its scratch database (`bench/locomo.py`, `bench/techchat.py`:
every session written through the API, ended and consolidated), so the data is what users have after
the worker has run: passages, facts, summaries. gunicorn serves it on 127.0.0.1 with the application
role (row-level security in force); the requests are the set's questions, asked of their conversation's
subject with `budgets: {"reserve": 0, "episodic": B}`, each question once per budget (no query vector
comes from the cache of an earlier run of the same budget).

CPU is read from /proc before and after each series: the gunicorn master and workers (all their
threads: the request's, the reader beside it, the trace writer after the answer, the model) and the
PostgreSQL backends connected to the database (persistent connections, so the same processes throughout;
a backend that ends between two readings is counted as far as it was read and said in the table). The
client's own CPU is not counted. Sequential requests first, then --concurrency clients.

Wall time on this machine swings 2x within a day: the table carries the reference loop's time
(`sum(i*i for i in range(1000000))`) measured before and after, and only runs of one sitting compare.
Writes docs/benchmarks/context_cpu_http_<set>.md (or --output) and prints the table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import secrets
import shlex
import statistics
import subprocess
import sys
import threading
import time
import timeit
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_latency import ROOT, _env, _with_db, serve  # noqa: E402

SETS = {
    "locomo": "locomo-eval",
    "techchat": "techchat-eval",
    "locomo-long": "locomo-long-eval",
    "locomo-dense": "locomo-dense",
}
# Beside the checkout, or beside a parent of it (a worktree elsewhere).
DATASET = next(
    (p / "shared/datasets/locomo/locomo10.json" for p in ROOT.parents if (p / "shared/datasets/locomo").is_dir()),
    ROOT.parent / "shared/datasets/locomo/locomo10.json",
)
TICKS = os.sysconf("SC_CLK_TCK")


def reference_loop_ms() -> float:
    """The machine's speed now: the best of five runs of a plain Python loop."""
    return min(timeit.repeat("sum(i*i for i in range(1000000))", number=1, repeat=5)) * 1000


def _dense_record(db: str) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), db), autocommit=True) as conn:
        row = conn.execute("SELECT settings FROM tenants_tenant WHERE slug = %s", [SETS["locomo-dense"]]).fetchone()
    assert row is not None
    return {k: v for k, v in row[0]["dense"].items() if k != "subjects"}


def dense_subjects(db: str) -> list[str]:
    """The subjects bench/dense_locomo.py built in `db` ("<sample_id>.k<k>")."""
    import psycopg

    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), db), autocommit=True) as conn:
        row = conn.execute("SELECT settings FROM tenants_tenant WHERE slug = %s", [SETS["locomo-dense"]]).fetchone()
    if row is None or "subjects" not in row[0].get("dense", {}):
        sys.exit(f"No finished dense tenant in {db}: run bench/dense_locomo.py --db {db} first.")
    return list(row[0]["dense"]["subjects"])


def questions(name: str, first: int = 0, subjects: list[str] | None = None) -> list[tuple[str, str]]:
    """(subject, question) pairs of the set, in a fixed shuffled order; with `first`, only those of the
    set's first conversations (a tenant written with bench/locomo.py --conversations K). On the dense
    tenant each question is asked of one of the `subjects` built on its conversation, drawn at random."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.base")
    import django

    django.setup()
    from evaluation import techchat
    from evaluation.recall import build_long, load_locomo

    if name == "techchat":
        conversations = techchat.generate(seed=techchat.DEFAULT_SEED, conversations=techchat.DEFAULT_CONVERSATIONS)
    else:
        conversations = load_locomo(DATASET)
        if name == "locomo-long":
            conversations = build_long(conversations, min_tokens=400, max_tokens=800)
    pairs = [(q.sample_id, q.text) for conv in conversations for q in conv.questions]
    random.Random(7).shuffle(pairs)
    if name == "locomo-dense":
        built_on: dict[str, list[str]] = {}
        for subject in subjects or []:
            built_on.setdefault(subject.rpartition(".k")[0], []).append(subject)
        draw = random.Random(11)
        pairs = [(draw.choice(built_on[sid]), q) for sid, q in pairs if sid in built_on]
    if first:
        written = {conv.sample_id for conv in conversations[:first]}
        pairs = [pair for pair in pairs if pair[0] in written]
    return pairs


def api_key(db: str, slug: str) -> str:
    import psycopg

    prefix = secrets.token_hex(6)
    raw = f"eng_{prefix}_{secrets.token_urlsafe(32)}"
    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), db), autocommit=True) as conn:
        row = conn.execute("SELECT id FROM tenants_tenant WHERE slug = %s", [slug]).fetchone()
        if row is None:
            sys.exit(f"No tenant {slug!r} in {db}: run the set's evaluation there first (bench/{slug[:-5]}.py).")
        conn.execute(
            "INSERT INTO tenants_apikey (tenant_id, name, prefix, key_hash, scopes, created_at, created_by) "
            "VALUES (%s, 'bench-cpu', %s, %s, '[\"read\"]', now(), 'bench')",
            [row[0], prefix, hashlib.sha256(raw.encode()).hexdigest()],
        )
    return raw


def _children(pid: int) -> set[int]:
    out = {pid}
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        for child in children:
            out |= _children(int(child))
    return out


def _cpu_seconds(pids: set[int]) -> tuple[float, int]:
    ticks, gone = 0, 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()
        except OSError:
            gone += 1
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / TICKS, gone


def _cpu_ns(pids: set[int]) -> int:
    """CPU time in nanoseconds of every thread of these processes (schedstat: exact, not in ticks)."""
    total = 0
    for pid in pids:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                total += int((task / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total


class Meter:
    """The CPU of the web server's processes and of the database's backends, by pid."""

    def __init__(self, server: subprocess.Popen[bytes], db: str) -> None:
        import psycopg

        self.server, self.db = server, db
        self.conn = psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), "postgres"), autocommit=True)

    def backends(self) -> set[int]:
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = 'client backend'", [self.db]
        ).fetchall()
        return {r[0] for r in rows}

    def read(self) -> dict[str, Any]:
        web = _children(self.server.pid)
        backends = self.backends()
        return {"web": web, "pg": backends, "web_s": _cpu_seconds(web)[0], "pg_s": _cpu_seconds(backends)[0]}

    def since(self, before: dict[str, Any]) -> dict[str, float]:
        web_after, _ = _cpu_seconds(before["web"])
        pg_after, gone = _cpu_seconds(before["pg"])
        # A connection opened during the series (a thread's first request) spent all its CPU in it.
        new_backends = self.backends() - before["pg"]
        return {
            "web_s": web_after - before["web_s"],
            "pg_s": pg_after - before["pg_s"] + _cpu_seconds(new_backends)[0],
            "backends_gone": float(gone),
            "backends_new": float(len(new_backends)),
        }


def run(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    slug = SETS[args.set]
    pairs = questions(args.set, args.conversations, dense_subjects(args.db) if args.set == "locomo-dense" else None)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    needed = args.warmup + len(args.budgets) * (args.requests + args.concurrent_requests)
    if len(pairs) < needed:
        sys.exit(f"The set has {len(pairs)} questions; {needed} are needed.")
    key = api_key(args.db, slug)
    reference_before = reference_loop_ms()
    server = serve(args.db, args.port, args.workers, args.threads)
    meter = Meter(server, args.db)
    local = threading.local()
    errors = 0

    def ask(pair: tuple[str, str], budget: int) -> float:
        nonlocal errors
        client = getattr(local, "client", None)
        if client is None:
            client = local.client = httpx.Client(
                base_url=f"http://127.0.0.1:{args.port}", headers={"Authorization": f"Bearer {key}"}, timeout=60
            )
        body = {
            "subject": pair[0],
            "query": pair[1],
            "max_tokens": budget,
            "budgets": {"reserve": 0, "episodic": budget},
        }
        started = time.perf_counter()
        response = client.post("/v1/context", json=body)
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200 or response.json()["tokens"]["total"] > budget:
            errors += 1
        return elapsed

    rows: list[dict[str, Any]] = []
    try:
        cursor = 0
        for pair in pairs[: args.warmup]:  # the model loaded in every worker, every connection open
            ask(pair, args.budgets[0])
        cursor = args.warmup
        for budget in args.budgets:
            series = pairs[cursor : cursor + args.requests]
            cursor += args.requests
            before = meter.read()
            started = time.perf_counter()
            walls = []
            cpu_each: list[float] = []
            watched = before["web"] | before["pg"]
            for pair in series:
                one_before = _cpu_ns(watched)
                walls.append(ask(pair, budget))
                # The trace is written just after the answer: wait for it to be paid before reading.
                time.sleep(args.settle)
                cpu_each.append((_cpu_ns(watched) - one_before) / 1e6)
            elapsed = time.perf_counter() - started
            used = meter.since(before)
            rows.append(_row("sequential", budget, walls, elapsed, used, cpu_each))
            series = pairs[cursor : cursor + args.concurrent_requests]
            cursor += args.concurrent_requests
            before = meter.read()
            started = time.perf_counter()
            with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
                walls = list(pool.map(lambda p, b=budget: ask(p, b), series))
            elapsed = time.perf_counter() - started
            rows.append(_row(f"{args.concurrency} clients", budget, walls, elapsed, meter.since(before), []))
    finally:
        server.terminate()
        server.wait(timeout=30)
        meter.conn.close()
    return {
        "set": args.set,
        "db": args.db,
        "tenant": slug,
        "rows": rows,
        "errors": errors,
        "reference_ms": [round(reference_before, 1), round(reference_loop_ms(), 1)],
        "workers": args.workers,
        "threads": args.threads,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "dense": _dense_record(args.db) if args.set == "locomo-dense" else None,
    }


def _row(
    mode: str, budget: int, walls: list[float], elapsed: float, used: dict[str, float], cpu_each: list[float]
) -> dict[str, Any]:
    ordered = sorted(walls)
    n = len(walls)
    return {
        "mode": mode,
        "budget": budget,
        "n": n,
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[min(n - 1, int(0.95 * n))],
        "rps": n / elapsed,
        "web_cpu_ms": used["web_s"] * 1000 / n,
        "pg_cpu_ms": used["pg_s"] * 1000 / n,
        "cpu_ms": (used["web_s"] + used["pg_s"]) * 1000 / n,
        "cpu_p50_ms": statistics.median(cpu_each) if cpu_each else None,
        "backends_gone": used["backends_gone"],
        "backends_new": used["backends_new"],
    }


def _tenant_sentence(result: dict[str, Any]) -> str:
    if result["set"] != "locomo-dense":
        return (
            f"Tenant `{result['tenant']}` of the scratch database `{result['db']}`, as its evaluation left it (every "
            "session written through the API, ended and consolidated). "
        )
    shape = result["dense"]["shape"]
    return (
        f"Tenant `{result['tenant']}` of the scratch database `{result['db']}`, built by bench/dense_locomo.py "
        f"(evaluation.dense): {shape['subjects']} subjects of {shape['passages']:,} passages and {shape['facts']:,} "
        f"facts each ({result['dense']['written']['passages']:,} passages, {result['dense']['written']['facts']:,} "
        "facts), LoCoMo's texts with the write path's columns and the product's embeddings, every index the "
        "product has; subject `<sample_id>.k<k>` is conversation k mod 10 after the others as its earlier "
        "history, and a question is asked of a subject built on its conversation. "
    )


def report(result: dict[str, Any], command: str) -> str:
    lines = [
        f"# Service CPU per context request over HTTP: {result['set']}",
        "",
        f"Produced by `{command}` on {result['date']}.",
        "",
        _tenant_sentence(result),
        f"gunicorn on 127.0.0.1, {result['workers']} workers x {result['threads']} threads, application role; "
        "each request is one of the "
        "set's questions for its conversation's subject, `budgets: {reserve: 0, episodic: B}`. CPU: the gunicorn "
        "processes (all threads) and the database's client backends, from /proc, divided by the requests; "
        "CPU p50 is the median over sequential requests of each one's CPU (every thread's schedstat, read before "
        "it and 50 ms after its answer, once the trace is written). The client's CPU is not counted.",
        "",
        f"Reference loop (`sum(i*i for i in range(1000000))`, best of 5): {result['reference_ms'][0]} ms before, "
        f"{result['reference_ms'][1]} ms after. Errors (non-200 or over budget): {result['errors']}.",
        "",
        "| mode | budget | requests | wall p50 ms | wall p95 ms | requests/s | service CPU ms/request | "
        "CPU p50 ms | web ms | PostgreSQL ms |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["rows"]:
        cpu_p50 = f"{r['cpu_p50_ms']:.0f}" if r["cpu_p50_ms"] is not None else ""
        lines.append(
            f"| {r['mode']} | {r['budget']} | {r['n']} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['rps']:.1f} | "
            f"{r['cpu_ms']:.1f} | {cpu_p50} | {r['web_cpu_ms']:.1f} | {r['pg_cpu_ms']:.1f} |"
        )
    gone = sum(r["backends_gone"] for r in result["rows"])
    new = sum(r["backends_new"] for r in result["rows"])
    if gone or new:
        lines += ["", f"Backends that ended during a series: {gone:.0f}; opened during one: {new:.0f} (counted whole)."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="A scratch database an evaluation left its tenant in")
    parser.add_argument("--set", choices=sorted(SETS), default="locomo")
    parser.add_argument("--budgets", default="1000,4000")
    parser.add_argument("--requests", type=int, default=150, help="Sequential requests per budget")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--concurrent-requests", type=int, default=160)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--settle", type=float, default=0.05, help="Seconds after each sequential answer")
    parser.add_argument(
        "--conversations", type=int, default=0, help="only the questions of the set's first K conversations"
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--port", type=int, default=8771)
    parser.add_argument(
        "--output", default="", help="Markdown report (default docs/benchmarks/context_cpu_http_<set>.md)"
    )
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    args.budgets = [int(b) for b in args.budgets.split(",") if b.strip()]
    result = run(args)
    command = "bench/context_cpu_http.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    text = report(result, command)
    print(text)
    output = Path(args.output) if args.output else ROOT / "docs" / "benchmarks" / f"context_cpu_http_{args.set}.md"
    output.write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

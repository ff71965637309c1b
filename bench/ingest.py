"""Benchmark of episode ingestion: POST /v1/episodes over loopback against a real gunicorn, and the
import of the whole LoCoMo file through `manage.py import_conversations`.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/ingest.py                     # batches of 100 and 500, 2 clients
    .venv/bin/python bench/ingest.py --requests 20 --batches 100,500,1000

Runs in a scratch database of its own (default engram_bench_episodic, created and migrated as the
owner, dropped at the end unless --keep), with a scratch tenant whose rate limit is off. The server
is gunicorn (config.settings.local, DEBUG off) on 127.0.0.1:--port with --workers sync workers; the
clients are --clients threads with keep-alive connections, each request a batch of LoCoMo turns.
Afterwards, EXPLAIN ANALYZE (as the application role, inside the tenant scope, after ANALYZE) of the
entity, topic, full-text and timeline queries on the ingested table. Prints a table and writes the
`ingest` section of docs/benchmarks/episodic.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DOC = ROOT / "docs" / "benchmarks" / "episodic.md"
LOCOMO = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo10.json"
PY = str(ROOT / ".venv" / "bin" / "python")


def with_db(url: str, name: str) -> str:
    return urlunparse(urlparse(url)._replace(path=f"/{name}"))


def point_env_at(db: str) -> None:
    """Make this process and its children use the scratch database (app role and owner)."""
    owner = os.environ.get("DATABASE_OWNER_URL")
    app = os.environ.get("DATABASE_URL")
    if not owner or not app:
        sys.exit("DATABASE_URL / DATABASE_OWNER_URL not set: run `set -a && . .data/engram.env && set +a` first.")
    os.environ["DATABASE_URL"] = with_db(app, db)
    os.environ["DATABASE_OWNER_URL"] = with_db(owner, db)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    os.environ["DJANGO_DEBUG"] = "false"
    os.environ.setdefault("ENGRAM_TORCH_THREADS", "2")


def prepare_db(db: str) -> None:
    import psycopg

    owner = os.environ["DATABASE_OWNER_URL"]
    with psycopg.connect(with_db(owner, "postgres"), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db]).fetchone():
            conn.execute(f'CREATE DATABASE "{db}"')
    subprocess.run([PY, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, check=True)


def drop_db(db: str) -> None:
    import psycopg

    owner = os.environ["DATABASE_OWNER_URL"]
    with psycopg.connect(with_db(owner, "postgres"), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


def analyze(table: str = "episodic_episode") -> None:
    import psycopg

    with psycopg.connect(os.environ["DATABASE_OWNER_URL"], autocommit=True) as conn:
        conn.execute(f"ANALYZE {table}")


def scratch_tenant(label: str) -> tuple[Any, str]:
    import django

    django.setup()
    from tenants.services import api_key_create, tenant_create

    slug = f"bench-{label}-{uuid.uuid4().hex[:6]}"
    tenant = tenant_create(name=slug, slug=slug, settings={"rate_limit_per_minute": 0})
    issued = api_key_create(tenant=tenant, name="bench", scopes=("read", "write"))
    return tenant, issued.raw


def locomo_turns() -> list[tuple[str, str]]:
    data = json.loads(LOCOMO.read_text())
    turns = []
    for conv in data:
        for key, value in conv["conversation"].items():
            if re.fullmatch(r"session_\d+", key) and isinstance(value, list):
                turns.extend((t["speaker"], t["text"]) for t in value)
    return turns


COUNTER = itertools.count()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class Server:
    def __init__(self, port: int, workers: int) -> None:
        self.port = port
        self.proc = subprocess.Popen(
            [
                str(ROOT / ".venv" / "bin" / "gunicorn"),
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                str(workers),
                "--timeout",
                "120",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=os.environ.copy(),
            start_new_session=True,
        )
        import httpx

        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        self.stop()
        sys.exit("gunicorn did not start")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def run_batches(
    *, port: int, key: str, turns: list[tuple[str, str]], batch: int, requests: int, clients: int
) -> dict[str, Any]:
    import httpx

    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    counter = COUNTER
    base = datetime(2024, 1, 1, tzinfo=UTC)

    def body(n: int) -> dict[str, Any]:
        items = []
        for i in range(batch):
            speaker, text = turns[(n * batch + i) % len(turns)]
            items.append(
                {
                    "subject": f"user-{n % 50}",
                    "session": f"b{batch}-s{n}",
                    "kind": "message",
                    "role": speaker,
                    "content": text,
                    "occurred_at": (base + timedelta(seconds=n * batch + i)).isoformat(),
                    "external_id": f"t{i}",
                }
            )
        return {"episodes": items}

    per_client = [requests // clients + (1 if c < requests % clients else 0) for c in range(clients)]

    def client(count: int) -> None:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}, timeout=120
        ) as http:
            for _ in range(count):
                with lock:
                    n = next(counter)
                payload = json.dumps(body(n)).encode()
                started = time.perf_counter()
                response = http.post("/v1/episodes", content=payload, headers={"Content-Type": "application/json"})
                elapsed = time.perf_counter() - started
                with lock:
                    if response.status_code == 201:
                        latencies.append(elapsed)
                    else:
                        failures.append(f"{response.status_code} {response.text[:200]}")

    threads = [threading.Thread(target=client, args=(c,)) for c in per_client]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    if failures:
        sys.exit(f"failed requests: {failures[:3]}")
    return {
        "batch": batch,
        "clients": clients,
        "requests": len(latencies),
        "episodes": len(latencies) * batch,
        "wall_s": wall,
        "eps": len(latencies) * batch / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": percentile(latencies, 0.95) * 1000,
    }


def import_locomo(slug: str) -> list[tuple[str, float, str]]:
    out = []
    for label in ("first run", "second run (idempotent)"):
        started = time.perf_counter()
        done = subprocess.run(
            [PY, "manage.py", "import_conversations", "--tenant", slug, "--format", "locomo", str(LOCOMO), "--quiet"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
            env=os.environ.copy(),
        )
        out.append((label, time.perf_counter() - started, done.stdout.strip()))
    return out


def explain_plans(tenant: Any) -> list[tuple[str, str, float]]:
    from django.contrib.postgres.search import SearchQuery

    from episodic.selectors import episode_list
    from tenants.scope import tenant_scope

    analyze()
    rows = []
    with tenant_scope(tenant):
        queries = {
            "entity = caroline": episode_list(tenant=tenant, entity="caroline"),
            "topic (none stored) = hiking": episode_list(tenant=tenant, topic="hiking"),
            "full text 'adoption'": episode_list(tenant=tenant).filter(
                search_vector=SearchQuery("adoption", search_type="raw", config="english")
            ),
            "subject timeline, 50 newest": episode_list(tenant=tenant, subject="user-7")[:50],
        }
        for label, qs in queries.items():
            plan = qs.select_related(None).explain(analyze=True)
            indexes = sorted(
                set(re.findall(r"(?:Index|Index Only|Bitmap Index) Scan (?:Backward )?(?:using|on) (\w+)", plan))
            )
            ms = float(re.search(r"Execution Time: ([\d.]+) ms", plan).group(1))  # type: ignore[union-attr]
            rows.append((label, ", ".join(indexes) or "(sequential scan)", ms))
    return rows


def write_section(name: str, text: str) -> None:
    DOC.parent.mkdir(parents=True, exist_ok=True)
    current = (
        DOC.read_text()
        if DOC.exists()
        else "# Episodic memory benchmarks\n\nMachine: 2 cores, embedded PostgreSQL 18 + pgvector, Redis 7; server and clients on the same machine.\n"
    )
    start, end = f"<!-- {name} -->", f"<!-- /{name} -->"
    block = f"{start}\n{text.strip()}\n{end}"
    if start in current:
        current = re.sub(re.escape(start) + r".*?" + re.escape(end), lambda _: block, current, flags=re.S)
    else:
        current = current.rstrip() + "\n\n" + block + "\n"
    DOC.write_text(current)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_bench_episodic")
    parser.add_argument("--port", type=int, default=18431)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--batches", default="100,500")
    parser.add_argument("--requests", type=int, default=40, help="requests per batch size")
    parser.add_argument("--no-locomo", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()
    command = "set -a && . .data/engram.env && set +a && .venv/bin/python bench/ingest.py " + " ".join(sys.argv[1:])

    logging.getLogger("httpx").setLevel(logging.WARNING)
    point_env_at(args.db)
    prepare_db(args.db)
    tenant, key = scratch_tenant("ingest")
    turns = locomo_turns()
    server = Server(args.port, args.workers)
    results = []
    try:
        for batch in (int(b) for b in args.batches.split(",")):
            run_batches(
                port=args.port, key=key, turns=turns, batch=batch, requests=args.clients, clients=args.clients
            )  # warm-up
            results.append(
                run_batches(
                    port=args.port, key=key, turns=turns, batch=batch, requests=args.requests, clients=args.clients
                )
            )
            r = results[-1]
            print(
                f"batch {r['batch']:>5}: {r['eps']:8.0f} episodes/s  p50 {r['p50_ms']:7.1f} ms  p95 {r['p95_ms']:7.1f} ms  ({r['requests']} requests)"
            )
    finally:
        server.stop()
    plans = explain_plans(tenant)
    imports = [] if args.no_locomo else import_locomo(scratch_tenant("locomo")[0].slug)
    if not args.keep:
        from django.db import connections

        connections.close_all()
        drop_db(args.db)

    lines = [
        "## Ingestion through POST /v1/episodes",
        "",
        f"Command: `{command.strip()}`",
        "",
        f"gunicorn with {args.workers} sync workers (config.settings.local, DEBUG off) and {args.clients} client threads "
        "with keep-alive, all on the same 2 cores; each request a batch of LoCoMo turns in new sessions with external ids; "
        "entities extracted on write, token counts with cl100k. Measured on "
        f"{datetime.now(UTC).date().isoformat()}; load average at the end {os.getloadavg()[0]:.1f} "
        "(the machine is shared: other processes compete for the 2 cores).",
        "",
        "| batch | requests | episodes | episodes/s | p50 per batch (ms) | p95 per batch (ms) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['batch']} | {r['requests']} | {r['episodes']} | {r['eps']:.0f} | {r['p50_ms']:.1f} | {r['p95_ms']:.1f} |"
        )
    lines += [
        "",
        "### Query plans on the ingested table",
        "",
        "EXPLAIN ANALYZE as the application role inside the tenant scope (row-level security in force), after ANALYZE:",
        "",
        "| query (episode_list) | index used | execution (ms) |",
        "|---|---|---:|",
    ]
    lines += [f"| {label} | {indexes} | {ms:.2f} |" for label, indexes, ms in plans]
    if imports:
        lines += [
            "",
            "## LoCoMo import (`manage.py import_conversations --format locomo`)",
            "",
            "| run | seconds | report |",
            "|---|---:|---|",
        ]
        lines += [f"| {label} | {seconds:.1f} | `{report}` |" for label, seconds, report in imports]
    text = "\n".join(lines)
    print(text)
    write_section("ingest", text)


if __name__ == "__main__":
    main()

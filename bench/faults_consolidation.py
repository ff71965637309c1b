"""Fault tests of consolidation with real Celery worker processes, a real broker and PostgreSQL.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/faults_consolidation.py                # all scenarios
    .venv/bin/python bench/faults_consolidation.py --episodes 1500 --only kill

Scenarios (each on a fresh scratch tenant in a scratch database, engram_faults, dropped at the end
unless --keep):
  kill    kill -9 of the worker in the middle of a consolidation, then a new worker: the broker
          redelivers the task (late acks; visibility timeout shortened to --visibility seconds), the
          same run continues and completes; no episode skipped, no fact duplicated.
  two     two workers given a consolidation of the same tenant at the same moment: they take turns on
          the tenant's advisory lock; every episode read exactly once.
  redis   a private redis-server (--redis-port) is stopped and started again while the worker runs:
          the worker reconnects and consumes the next tasks.
Workers run `--pool solo`, so the process killed is the one executing the task. The extractor is the
rule-based one slowed by --delay seconds per batch (bench/faults_support.py). Prints a table and
writes docs/benchmarks/faults.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.ingest import drop_db, point_env_at, prepare_db  # noqa: E402

DOC = ROOT / "docs" / "benchmarks" / "faults.md"
PY = str(ROOT / ".venv" / "bin" / "python")
CELERY = str(ROOT / ".venv" / "bin" / "celery")


def worker(name: str, broker: str, log: Path, env_extra: dict[str, str]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CELERY_BROKER_URL": broker, **env_extra}
    return subprocess.Popen(
        [CELERY, "-A", "config", "worker", "--pool", "solo", "-n", f"{name}@faults", "-l", "INFO", "-Q", "faults"],
        cwd=ROOT,
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def seed(tenant_slug: str, n: int) -> Any:
    from episodic.services import episodes_append
    from tenants.scope import tenant_scope
    from tenants.services import tenant_create

    tenant = tenant_create(name=tenant_slug, slug=tenant_slug)
    for start in range(0, n, 500):
        with tenant_scope(tenant):
            episodes_append(
                tenant=tenant,
                items=[
                    {
                        "subject": f"u{i % 20}",
                        "session": f"s{i % 40}",
                        "kind": "message",
                        "role": "user",
                        "content": f"We use Tool{i} for job {i}.",
                    }
                    for i in range(start, min(n, start + 500))
                ],
            )
    return tenant


def check(tenant: Any, n: int) -> dict[str, Any]:
    from django.db import connection

    from consolidation.models import ConsolidationRun, ConsolidationWatermark
    from episodic.models import Episode
    from semantic.models import Fact, FactSource
    from tenants.scope import tenant_scope

    with tenant_scope(tenant):
        wm = ConsolidationWatermark.objects.get()
        ids = list(Episode.objects.values_list("id", flat=True))
        skipped = sum(1 for i in ids if not wm.is_done(i))
        facts = Fact.objects.count()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(DISTINCT (entity, attribute, value_key)) FROM semantic_fact WHERE tenant_id = %s",
                [tenant.id],
            )
            distinct = cursor.fetchone()[0]
        sources = FactSource.objects.count()
        runs = list(ConsolidationRun.objects.values("status", "attempts", "episodes_read", "facts_created", "task_id"))
    return {
        "episodes": len(ids),
        "skipped": skipped,
        "facts": facts,
        "distinct_keys": distinct,
        "fact_sources": sources,
        "episodes_read": sum(r["episodes_read"] for r in runs),
        "runs": runs,
        "ok": skipped == 0 and facts == distinct == n and sources == n and sum(r["episodes_read"] for r in runs) == n,
    }


def wait_for(predicate: Any, timeout: float, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return False


def runs(tenant: Any) -> list[Any]:
    from consolidation.models import ConsolidationRun
    from tenants.scope import tenant_scope

    with tenant_scope(tenant):
        return list(ConsolidationRun.objects.order_by("id"))


def enqueue(tenant: Any, broker: str | None = None) -> str:
    from config.celery import app
    from consolidation.tasks import consolidate_tenant

    with app.connection_for_write(broker or os.environ["CELERY_BROKER_URL"]) as conn:
        return str(
            consolidate_tenant.apply_async((str(tenant.id), "manual", "fault test"), queue="faults", connection=conn).id
        )


def scenario_kill(args: argparse.Namespace, broker: str, logdir: Path, env: dict[str, str]) -> dict[str, Any]:
    tenant = seed(f"faults-kill-{uuid.uuid4().hex[:6]}", args.episodes)
    w1 = worker("w1", broker, logdir / "kill-w1.log", env)
    enqueue(tenant)
    started = time.monotonic()
    assert wait_for(lambda: any(r.episodes_read >= args.episodes // 3 for r in runs(tenant)), 120), (
        "run never progressed"
    )
    read_at_kill = max(r.episodes_read for r in runs(tenant))
    os.kill(w1.pid, signal.SIGKILL)
    w1.wait()
    killed_at = time.monotonic()
    # The message stays unacknowledged in the broker; a new worker restores it once the visibility
    # timeout has passed.
    w2 = worker("w2", broker, logdir / "kill-w2.log", env)
    try:
        done = wait_for(lambda: any(r.status == "succeeded" for r in runs(tenant)), args.visibility + 180, step=1.0)
    finally:
        w2.terminate()
        w2.wait(30)
    result = check(tenant, args.episodes)
    result.update(
        completed=done,
        read_at_kill=read_at_kill,
        recovery_seconds=round(time.monotonic() - killed_at, 1),
        total_seconds=round(time.monotonic() - started, 1),
    )
    result["ok"] = result["ok"] and done and len(result["runs"]) == 1 and result["runs"][0]["attempts"] == 2
    return result


def scenario_two(args: argparse.Namespace, broker: str, logdir: Path, env: dict[str, str]) -> dict[str, Any]:
    tenant = seed(f"faults-two-{uuid.uuid4().hex[:6]}", args.episodes)
    workers = [worker(f"t{i}", broker, logdir / f"two-w{i}.log", env) for i in (1, 2)]
    time.sleep(3)
    enqueue(tenant)
    enqueue(tenant)
    started = time.monotonic()
    try:
        done = wait_for(lambda: sum(r.status == "succeeded" for r in runs(tenant)) == 2, 300, step=0.5)
    finally:
        for w in workers:
            w.terminate()
            w.wait(30)
    result = check(tenant, args.episodes)
    result.update(completed=done, total_seconds=round(time.monotonic() - started, 1))
    result["ok"] = result["ok"] and done
    return result


def scenario_redis(args: argparse.Namespace, logdir: Path, env: dict[str, str]) -> dict[str, Any]:
    binary = shutil.which("redis-server")
    if binary is None:
        return {"ok": False, "error": "no redis-server on PATH"}
    port = args.redis_port
    broker = f"redis://127.0.0.1:{port}/0"
    rdir = Path(tempfile.mkdtemp(prefix="faults-redis-"))

    def start_redis() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(rdir),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=(logdir / "redis.log").open("ab"),
            stderr=subprocess.STDOUT,
        )

    redis = start_redis()
    time.sleep(1)
    tenant = seed(f"faults-redis-{uuid.uuid4().hex[:6]}", args.episodes // 4)
    w = worker("r1", broker, logdir / "redis-w1.log", env)
    try:
        enqueue(tenant, broker)
        first = wait_for(lambda: any(r.status == "succeeded" for r in runs(tenant)), 120)
        redis.terminate()
        redis.wait(10)
        down_at = time.monotonic()
        time.sleep(args.redis_down)
        redis = start_redis()
        time.sleep(1)
        from episodic.services import episodes_append
        from tenants.scope import tenant_scope

        with tenant_scope(tenant):
            episodes_append(
                tenant=tenant,
                items=[
                    {"subject": "u0", "session": "s0", "kind": "message", "role": "user", "content": "We use Later."}
                ],
            )
        enqueue(tenant, broker)
        second = wait_for(lambda: sum(r.status == "succeeded" for r in runs(tenant)) == 2, 120, step=0.5)
        reconnect = round(time.monotonic() - down_at, 1)
    finally:
        w.terminate()
        w.wait(30)
        redis.terminate()
        redis.wait(10)
        shutil.rmtree(rdir, ignore_errors=True)
    return {
        "ok": first and second,
        "first_run": first,
        "run_after_restart": second,
        "redis_down_seconds": args.redis_down,
        "seconds_from_stop_to_second_run": reconnect,
    }


# Beat is covered by a test rather than a scenario here: it needs no load, only a broker that goes away.
BEAT_NOTE = [
    "## Beat through a Redis restart",
    "",
    "`tests/production/test_beat_redis_restart.py` (in the suite, about a minute) runs `celery beat` with the",
    "project's settings against a private redis-server on a free port, with a schedule firing every second; it",
    "stops the server for 3 s and starts it again, empty. Beat keeps sending, and gives up no tick while the",
    "broker is away: beat alone retries a send for about a minute (`BEAT_PUBLISH_RETRY_POLICY` in",
    "config/celery.py), so a daily run (decay, archiving) that falls in a restart is sent late, not skipped.",
    "Before that policy the same test saw `Couldn't apply scheduled task` during the outage: the tick was lost.",
    "The web process keeps Celery's short default, so a request never hangs on a missing broker.",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=1200)
    parser.add_argument("--batch-delay", type=float, default=0.4)
    parser.add_argument("--visibility", type=int, default=20)
    parser.add_argument("--broker-db", type=int, default=14)
    parser.add_argument("--redis-port", type=int, default=6391)
    parser.add_argument("--redis-down", type=float, default=5.0)
    parser.add_argument("--db", default="engram_faults")
    parser.add_argument("--only", choices=["kill", "two", "redis"])
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()

    point_env_at(args.db)
    prepare_db(args.db)
    broker = f"redis://127.0.0.1:6379/{args.broker_db}"
    os.environ["CELERY_BROKER_URL"] = broker
    env = {
        "ENGRAM_EXTRACTOR": "bench.faults_support.SlowExtractor",
        "ENGRAM_EMBEDDER": "core.embedding.HashingEmbedder",
        "FAULTS_BATCH_DELAY": str(args.batch_delay),
        # Time limits stay below the visibility timeout (as in production, only shorter).
        "CELERY_VISIBILITY_TIMEOUT": str(args.visibility),
        "CELERY_TASK_TIME_LIMIT": str(args.visibility * 10),
        "CELERY_TASK_SOFT_TIME_LIMIT": str(args.visibility * 9),
        "PYTHONPATH": str(ROOT),
    }
    os.environ.update({k: v for k, v in env.items() if k.startswith("ENGRAM_")})
    import django

    django.setup()
    import redis as redis_lib

    redis_lib.Redis.from_url(broker).flushdb()
    logdir = Path(tempfile.mkdtemp(prefix="faults-logs-"))
    results: dict[str, dict[str, Any]] = {}
    try:
        scenarios = {
            "kill": lambda: scenario_kill(args, broker, logdir, env),
            "two": lambda: scenario_two(args, broker, logdir, env),
            "redis": lambda: scenario_redis(args, logdir, env),
        }
        for name, run in scenarios.items():
            if args.only in (None, name):
                try:
                    results[name] = run()
                except Exception as exc:  # noqa: BLE001 - a failed scenario is reported, the others still run
                    results[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        if not args.keep:
            from django.db import connections

            connections.close_all()
            drop_db(args.db)
    command = "set -a && . .data/engram.env && set +a && .venv/bin/python bench/faults_consolidation.py " + " ".join(
        sys.argv[1:]
    )
    lines = [
        "# Consolidation under faults",
        "",
        f"Command: `{command.strip()}`  ",
        f"Episodes per tenant: {args.episodes} (20 subjects, one distinct fact each), batch delay {args.batch_delay}s, "
        f"visibility timeout {args.visibility}s, workers `--pool solo`, broker Redis.",
        "",
        "| scenario | result | episodes | skipped | facts | distinct keys | fact sources | episodes read (sum) | details |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        details = {
            k: v
            for k, v in r.items()
            if k not in {"ok", "episodes", "skipped", "facts", "distinct_keys", "fact_sources", "episodes_read", "runs"}
        }
        if "runs" in r:
            details["runs"] = [{k: v for k, v in run.items() if k != "task_id"} for run in r["runs"]]
        lines.append(
            f"| {name} | {'PASS' if r.get('ok') else 'FAIL'} | {r.get('episodes', '-')} | {r.get('skipped', '-')} | "
            f"{r.get('facts', '-')} | {r.get('distinct_keys', '-')} | {r.get('fact_sources', '-')} | "
            f"{r.get('episodes_read', '-')} | {details} |"
        )
    lines += ["", f"Worker logs were in {logdir} (temporary).", "", *BEAT_NOTE]
    text = "\n".join(lines) + "\n"
    print(text)
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
    sys.exit(0 if all(r.get("ok") for r in results.values()) else 1)


if __name__ == "__main__":
    main()

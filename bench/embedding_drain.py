"""Benchmark of the embedding backlog drain with the real model (all-MiniLM-L6-v2 on the CPU).

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/embedding_drain.py                  # 2,000 LoCoMo turns, batches of 64
    .venv/bin/python bench/embedding_drain.py --episodes 5882 --batch 128

Stores --episodes LoCoMo turns through episodes_append in a scratch tenant of a scratch database
(engram_bench_episodic, dropped at the end unless --keep), then times `embed_pending` (the body of
the `embed_backlog_for_tenant` task: claim a batch with SKIP LOCKED, embed, write back, commit) until
the backlog is empty. Torch uses ENGRAM_TORCH_THREADS threads (2 by default). Prints a table and
writes the `drain` section of docs/benchmarks/episodic.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ingest  # noqa: E402  (the shared set-up of the episodic benchmarks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_bench_episodic")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    command = "set -a && . .data/engram.env && set +a && .venv/bin/python bench/embedding_drain.py " + " ".join(
        sys.argv[1:]
    )

    ingest.point_env_at(args.db)
    ingest.prepare_db(args.db)
    tenant, _ = ingest.scratch_tenant("drain")

    from core.embedding import get_embedder
    from episodic.selectors import embedding_backlog
    from episodic.services import episodes_append
    from episodic.tasks import embed_pending
    from tenants.scope import tenant_scope

    embedder = get_embedder()
    turns = ingest.locomo_turns()[: args.episodes]
    base = datetime(2024, 1, 1, tzinfo=UTC)
    for start in range(0, len(turns), 500):
        items = [
            {
                "subject": "user-1",
                "session": f"drain-{(start + i) // 25}",
                "role": speaker,
                "content": text,
                "occurred_at": (base + timedelta(seconds=start + i)).isoformat(),
            }
            for i, (speaker, text) in enumerate(turns[start : start + 500])
        ]
        with tenant_scope(tenant):
            episodes_append(tenant=tenant, items=items)
    with tenant_scope(tenant):
        pending = embedding_backlog(tenant=tenant)

    load_started = time.perf_counter()
    embedder.embed(["warm-up"])  # model load is a one-off per worker process, reported apart
    load_seconds = time.perf_counter() - load_started

    started = time.perf_counter()
    report = embed_pending(tenant=tenant, batch_size=args.batch, max_batches=10**6)
    elapsed = time.perf_counter() - started
    with tenant_scope(tenant):
        left = embedding_backlog(tenant=tenant)
    if not args.keep:
        from django.db import connections

        connections.close_all()
        ingest.drop_db(args.db)

    per_episode_ms = [s / args.batch * 1000 for s in report.batch_seconds[:-1]] or [0.0]
    rows = {
        "episodes pending before": pending,
        "episodes embedded": report.embedded,
        "left afterwards": left,
        "batch size": args.batch,
        "batches": report.batches,
        "drain rate (episodes/s)": f"{report.embedded / elapsed:.1f}",
        "wall time (s)": f"{elapsed:.1f}",
        "batch time p50 (ms)": f"{statistics.median(report.batch_seconds) * 1000:.0f}",
        "batch time p95 (ms)": f"{ingest.percentile(report.batch_seconds, 0.95) * 1000:.0f}",
        "per episode p50 (ms, full batches)": f"{statistics.median(per_episode_ms):.2f}",
        "model load, once per worker (s)": f"{load_seconds:.1f}",
        "embedder": getattr(embedder, "name", type(embedder).__name__),
        "torch threads": os.environ.get("ENGRAM_TORCH_THREADS", "2"),
        "load average at the end (2 cores, shared)": f"{os.getloadavg()[0]:.1f}",
    }
    lines = [
        "## Embedding backlog drain (worker, real model)",
        "",
        f"Command: `{command.strip()}`",
        "",
        f"LoCoMo turns stored through episodes_append, then drained by `embed_pending` (the task body) with "
        f"{rows['embedder']} on the CPU, torch on ENGRAM_TORCH_THREADS threads. Measured on {datetime.now(UTC).date().isoformat()}.",
        "",
        "| measure | value |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in rows.items()],
    ]
    text = "\n".join(lines)
    print(text)
    print(json.dumps({k: str(v) for k, v in rows.items()}))
    ingest.write_section("drain", text)


if __name__ == "__main__":
    main()

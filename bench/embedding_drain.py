"""Benchmark of the embedding backlog drain with the real model (all-MiniLM-L6-v2 on the CPU).

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/embedding_drain.py                  # 2,000 LoCoMo turns, batches of 64
    .venv/bin/python bench/embedding_drain.py --episodes 5882 --batch 128
    .venv/bin/python bench/embedding_drain.py --long           # long-turn LoCoMo episodes (400-800 tokens)
    ENGRAM_EMBEDDER=core.embedding.MiniLMEmbedder .venv/bin/python bench/embedding_drain.py   # the torch engine

Stores --episodes LoCoMo turns (with --long: episodes of the long-turn variant, each cut into passages
when written) through episodes_append in a scratch tenant of a scratch database
(engram_bench_episodic, dropped at the end unless --keep), then times `embed_pending` (the body of
the `embed_backlog_for_tenant` task: claim a batch of passages with SKIP LOCKED, embed, write back,
give finished episodes their vector, commit) until the backlog is empty. The engine is the configured
one (ENGRAM_EMBEDDER; the ONNX engine by default) on ENGRAM_EMBED_THREADS threads (2 by default).
Prints a table and writes the `drain` (or `drain-long`) section of docs/benchmarks/episodic.md.
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
    parser.add_argument("--long", action="store_true", help="long-turn episodes instead of single turns")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    command = "set -a && . .data/engram.env && set +a && .venv/bin/python bench/embedding_drain.py " + " ".join(
        sys.argv[1:]
    )

    ingest.point_env_at(args.db)
    ingest.prepare_db(args.db)
    tenant, _ = ingest.scratch_tenant("drain")

    from core.embedding import embedding_threads, get_embedder
    from episodic.models import Passage
    from episodic.selectors import embedding_backlog
    from episodic.services import episodes_append
    from episodic.tasks import embed_pending
    from tenants.scope import tenant_scope

    embedder = get_embedder()
    if args.long:
        from evaluation.recall import build_long, load_locomo

        turns = [(t.speaker, t.text) for c in build_long(load_locomo(ingest.LOCOMO)) for t in c.turns][: args.episodes]
    else:
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
        passages_pending = Passage.objects.filter(embedding__isnull=True).count()

    load_started = time.perf_counter()
    embedder.embed(["warm-up"])  # model load is a one-off per worker process, reported apart
    load_seconds = time.perf_counter() - load_started

    started, cpu_started = time.perf_counter(), time.process_time()
    report = embed_pending(tenant=tenant, batch_size=args.batch, max_batches=10**6)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    with tenant_scope(tenant):
        left = embedding_backlog(tenant=tenant)
    if not args.keep:
        from django.db import connections

        connections.close_all()
        ingest.drop_db(args.db)

    per_passage_ms = [s / args.batch * 1000 for s in report.batch_seconds[:-1]] or [0.0]
    engine = type(embedder).__name__
    if getattr(embedder, "fallback", None) is not None:
        engine += " (no ONNX file: torch fallback)"
    rows = {
        "episodes stored": len(turns),
        "episodes pending before": pending,
        "passages pending before": passages_pending,
        "passages embedded": report.embedded,
        "episodes given their vector": report.episodes,
        "episodes left afterwards": left,
        "batch size (passages)": args.batch,
        "batches": report.batches,
        "drain rate (passages/s)": f"{report.embedded / elapsed:.1f}",
        "drain rate (episodes/s)": f"{report.episodes / elapsed:.1f}",
        "wall time (s)": f"{elapsed:.1f}",
        "batch time p50 (ms)": f"{statistics.median(report.batch_seconds) * 1000:.0f}",
        "batch time p95 (ms)": f"{ingest.percentile(report.batch_seconds, 0.95) * 1000:.0f}",
        "per passage p50 (ms, full batches)": f"{statistics.median(per_passage_ms):.2f}",
        "CPU of this process (s; PostgreSQL's apart)": f"{cpu:.1f}",
        "CPU per passage (ms)": f"{cpu / max(1, report.embedded) * 1000:.1f}",
        "passages/s that 2 free cores' CPU buys": f"{2 * report.embedded / cpu:.0f}" if cpu else "-",
        "model load, once per worker (s)": f"{load_seconds:.1f}",
        "embedder": getattr(embedder, "name", type(embedder).__name__),
        "engine": engine,
        "file": Path(embedder.path).name if getattr(embedder, "path", None) else "-",
        "embedding threads": embedding_threads(),
        "load average at the end (2 cores, shared)": f"{os.getloadavg()[0]:.1f}",
        "reference loop, sum(i*i for i in range(1000000)) (ms of CPU)": f"{_reference_loop_ms():.0f}",
    }
    kind = "long-turn LoCoMo episodes (400-800 tokens, cut into passages)" if args.long else "LoCoMo turns"
    lines = [
        "## Embedding backlog drain (worker, real model)" + (": long turns" if args.long else ""),
        "",
        f"Command: `{command.strip()}`",
        "",
        f"{kind[0].upper()}{kind[1:]} stored through episodes_append, then drained by `embed_pending` (the task body) with "
        f"{rows['embedder']} on the CPU ({engine}, {rows['embedding threads']} threads). Measured on "
        f"{datetime.now(UTC).date().isoformat()}.",
        "",
        "| measure | value |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in rows.items()],
    ]
    text = "\n".join(lines)
    print(text)
    print(json.dumps({k: str(v) for k, v in rows.items()}))
    ingest.write_section("drain-long" if args.long else "drain", text)


def _reference_loop_ms() -> float:
    """The team's yardstick of this shared machine's speed at the time of the run."""
    started = time.process_time()
    sum(i * i for i in range(1_000_000))
    return (time.process_time() - started) * 1000


if __name__ == "__main__":
    main()

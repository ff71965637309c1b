"""Build a dense LoCoMo tenant in a scratch database: --passages passages and --facts facts for each of
--subjects subjects, text drawn from the LoCoMo conversations (evaluation.dense says how and why).

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/dense_locomo.py --db engram_dense_100k --subjects 10      # 100,000 passages
    .venv/bin/python bench/dense_locomo.py --db engram_dense_1m --subjects 100       # 1,000,000 passages
    .venv/bin/python bench/context_cpu_http.py --db engram_dense_1m --set locomo-dense

Stages, each timed and printed with its totals:
1. create (as the owner) and migrate the scratch database; the tenant `locomo-dense`;
2. plan the subjects and compute each distinct text's stored columns once (the write path's functions);
3. embed each distinct passage text and fact statement once with the product's embedder (vectors kept in
   --cache, outside the repository, keyed by the embedder's name and the text);
4. drop the secondary indexes of the five tables (constraints stay), COPY the rows under the tenant's scope,
   then build the dropped indexes again from their own definitions (the HNSW builds' progress from
   pg_stat_progress_create_index), then VACUUM ANALYZE (the prefilter's index-only scan needs the
   visibility map).
A database that already holds the tenant is left as it is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_cpu_http import DATASET  # noqa: E402
from context_latency import ROOT, _env, _with_db, prepare  # noqa: E402

SLUG = "locomo-dense"
TABLES = ("episodic_session", "episodic_episode", "episodic_passage", "semantic_fact", "semantic_factsource")


def _say(started: float, text: str) -> None:
    print(f"[{time.perf_counter() - started:7.0f}s] {text}", flush=True)


def _embed(texts: list[str], cache: Path, started: float) -> dict[str, np.ndarray]:
    from core.embedding import get_embedder

    embedder = get_embedder()
    stored: dict[str, np.ndarray] = {}
    if cache.exists():
        with np.load(cache, allow_pickle=False) as data:
            if str(data["model"]) == embedder.name:
                stored = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    def key(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    missing = [t for t in texts if key(t) not in stored]
    _say(started, f"embedding {len(missing)} of {len(texts)} distinct texts with {embedder.name}")
    for at in range(0, len(missing), 256):
        batch = missing[at : at + 256]
        for text, vector in zip(batch, embedder.embed(batch), strict=True):
            stored[key(text)] = vector
        if (at // 256) % 8 == 0:
            _say(started, f"  embedded {min(at + 256, len(missing))}/{len(missing)}")
    if missing:
        cache.parent.mkdir(parents=True, exist_ok=True)
        keys = list(stored)
        np.savez(cache, model=embedder.name, keys=np.array(keys), vectors=np.stack([stored[k] for k in keys]))
    return {t: stored[key(t)] for t in texts}


def _secondary_indexes(cursor: Any) -> list[tuple[str, str]]:
    """(name, definition) of the tables' indexes that back no constraint."""
    cursor.execute(
        "SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
        "WHERE i.indrelid::regclass::text = ANY(%s) "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) ORDER BY c.relname",
        [list(TABLES)],
    )
    return [(r[0], r[1]) for r in cursor.fetchall()]


def _watch_builds(db: str, stop: threading.Event, started: float) -> None:
    import psycopg

    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), db), autocommit=True) as conn:
        while not stop.wait(30):
            for phase, done, total, blocks, blocks_total in conn.execute(
                "SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total FROM pg_stat_progress_create_index"
            ).fetchall():
                _say(started, f"  index build: {phase}, tuples {done}/{total}, blocks {blocks}/{blocks_total}")


def build(args: argparse.Namespace) -> dict[str, Any]:
    started = time.perf_counter()
    timings: dict[str, float] = {}
    prepare(args.db)
    os.environ.update(
        {
            "DATABASE_URL": _with_db(_env("DATABASE_OWNER_URL"), args.db),
            "DATABASE_OWNER_URL": _with_db(_env("DATABASE_OWNER_URL"), args.db),
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
        }
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.db import connection

    from evaluation.dense import (
        DenseShape,
        dense_plan,
        dense_statements,
        dense_texts_to_embed,
        dense_write,
        locomo_sources,
    )
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    shape = DenseShape(subjects=args.subjects, passages=args.passages, facts=args.facts)
    existing = Tenant.objects.filter(slug=SLUG).first()
    if existing is not None:
        print(f"{args.db} already holds {SLUG} ({existing.settings.get('dense')}); left as it is")
        return existing.settings.get("dense", {})
    tenant = Tenant.objects.create(
        name="LoCoMo dense", slug=SLUG, settings={"rate_limit_per_minute": 0, "dense": {"shape": shape.__dict__}}
    )
    mark = time.perf_counter()
    plans, texts = dense_plan(tenant=tenant, sources=locomo_sources(args.dataset), shape=shape)
    timings["plan_s"] = time.perf_counter() - mark
    _say(started, f"planned {len(plans)} subjects; {len(texts)} distinct texts given their columns")
    wanted = sorted(set(dense_texts_to_embed(texts)) | set(dense_statements(plans)))
    mark = time.perf_counter()
    vectors = _embed(wanted, args.cache, started)
    timings["embed_s"] = time.perf_counter() - mark

    with connection.cursor() as django_cursor:
        cursor = django_cursor.cursor
        cursor.execute(f"SET maintenance_work_mem = '{args.maintenance_mem}'")
        cursor.execute(f"SET max_parallel_maintenance_workers = {args.parallel}")
        indexes = _secondary_indexes(cursor)
        for name, _ in indexes:
            cursor.execute(f'DROP INDEX "{name}"')
        _say(started, f"dropped {len(indexes)} secondary indexes for the load")

        def progress(table: str, done: int, total: int) -> None:
            _say(started, f"  {table}: {done}/{total}")

        mark = time.perf_counter()
        with tenant_scope(tenant):
            written = dense_write(cursor=cursor, tenant=tenant, plans=plans, vectors=vectors, progress=progress)
        timings["copy_s"] = time.perf_counter() - mark
        _say(started, f"written {written}")
        stop = threading.Event()
        watcher = threading.Thread(target=_watch_builds, args=(args.db, stop, started), daemon=True)
        watcher.start()
        index_times = {}
        for number, (name, definition) in enumerate(indexes, start=1):
            mark = time.perf_counter()
            cursor.execute(definition)
            index_times[name] = round(time.perf_counter() - mark, 1)
            _say(started, f"index {number}/{len(indexes)} {name} in {index_times[name]:.0f}s")
        stop.set()
        timings["indexes_s"] = sum(index_times.values())
        mark = time.perf_counter()
        for table in TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")
        timings["vacuum_s"] = time.perf_counter() - mark
    timings["total_s"] = time.perf_counter() - started
    record = {
        "shape": shape.__dict__,
        "written": written,
        "distinct_texts": len(texts),
        "embedded": len(wanted),
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
        "index_s": index_times,
        "subjects": [p.subject for p in plans],
    }
    Tenant.objects.filter(pk=tenant.pk).update(settings={**tenant.settings, "dense": record})
    _say(started, json.dumps({k: v for k, v in record.items() if k != "subjects"}))
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--subjects", type=int, default=100)
    parser.add_argument("--passages", type=int, default=10_000, help="per subject")
    parser.add_argument("--facts", type=int, default=1_000, help="per subject")
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/engram_dense_vectors.npz"))
    parser.add_argument("--maintenance-mem", default="4GB", help="the HNSW graph must fit, or its build crawls")
    parser.add_argument("--parallel", type=int, default=1, help="max_parallel_maintenance_workers")
    build(parser.parse_args())


if __name__ == "__main__":
    main()

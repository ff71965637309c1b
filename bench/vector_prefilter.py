"""The vector channel over a subject's passages: the exact cosine scan against the binary-quantized
prefilter (Hamming distance on 48-byte codes from the covering index, then exact cosine on the best
few hundred), in PostgreSQL alone.

    .venv/bin/python bench/vector_prefilter.py                 # subjects of 300, 10,000 and 50,000 passages
    .venv/bin/python bench/vector_prefilter.py --queries 50    # quicker

Stages (the data is built once and reused):
1. vectors: all-MiniLM-L6-v2 (the ONNX engine) over every LoCoMo text (turns, observations, event and
   session summaries, ~9,400) and --queries LoCoMo questions, cached in --cache; the 50,000-passage
   subject tops the real vectors up with blends of two of them (normalised sums);
2. a scratch database (default engram_bench_prefilter), migrated, one tenant with a subject of each
   size and another tenant with a copy of the 10,000 (the HNSW index is shared by all tenants, as in
   production); one episode per passage; VACUUM ANALYZE and pg_prewarm;
3. as the application role (row-level security in force), for each subject and each setting of
   ENGRAM_VECTOR_PREFILTER_CANDIDATES (0 = exact): passage_search_rows with the query's vector and no
   words (so its order is the vector channel's), the channel's statement caught and run again under
   EXPLAIN (ANALYZE, BUFFERS, TIMING OFF), and the CPU of the server process that ran it (/proc);
   recall@10 against a brute-force scan in numpy over the subject's vectors.
Prints a table and writes docs/benchmarks/vector_prefilter.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shlex
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_latency import _copy, _env, _with_db, built, prepare  # noqa: E402
from context_latency import _db_env as _scale_db_env  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks" / "vector_prefilter.md"
SIZES = (300, 10_000, 50_000)
SETTINGS = (0, 200, 400, 800)
SIZE_TAG = "v1"


def _locomo() -> Path:
    for base in (ROOT.parent, ROOT.parent.parent):
        path = base / "shared" / "datasets" / "locomo" / "locomo10.json"
        if path.is_file():
            return path
    sys.exit("the LoCoMo file (shared/datasets/locomo/locomo10.json) is not on this machine")


def _db_env(db: str) -> dict[str, str]:
    return {**_scale_db_env(db), "DJANGO_DEBUG": "false"}


def texts_and_questions(n_questions: int) -> tuple[list[str], list[str]]:
    data = json.loads(_locomo().read_text())
    texts: list[str] = []
    questions: list[str] = []
    for sample in data:
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                texts += [t["text"] for t in turns if t.get("text")]
        for per_speaker in sample.get("observation", {}).values():
            for items in per_speaker.values():
                texts += [item[0] for item in items if isinstance(item, list) and item and item[0]]
        for per_speaker in sample.get("event_summary", {}).values():
            if isinstance(per_speaker, dict):
                for items in per_speaker.values():
                    if isinstance(items, list):
                        texts += [t for t in items if isinstance(t, str) and t]
        for summary in sample.get("session_summary", {}).values():
            texts += [s.strip() + "." for s in str(summary).split(". ") if len(s.strip()) > 20]
        questions += [str(q["question"]) for q in sample["qa"]]
    texts = list(dict.fromkeys(texts))
    random.Random(5).shuffle(questions)
    return texts, questions[:n_questions]


def vectors(args: argparse.Namespace) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The texts' and the first --queries questions' vectors (at least 100 questions are embedded and
    cached, so that a smaller --queries reuses the cache)."""
    texts, questions = texts_and_questions(max(args.queries, 100))
    key = hashlib.sha256(json.dumps([texts, questions]).encode()).hexdigest()[:16]
    cache = Path(args.cache)
    if cache.is_file():
        stored = np.load(cache)
        if str(stored["key"]) == key:
            return texts, stored["texts"], stored["questions"][: args.queries]
    sys.path.insert(0, str(ROOT))
    from core.embedding import OnnxMiniLMEmbedder

    engine = OnnxMiniLMEmbedder(path=ROOT / ".data" / "models" / "all-MiniLM-L6-v2.onnx")
    started = time.perf_counter()
    text_vectors = np.asarray(engine.embed(texts), dtype=np.float32)
    question_vectors = np.asarray(engine.embed(questions), dtype=np.float32)
    print(f"embedded {len(texts)} texts and {len(questions)} questions in {time.perf_counter() - started:.0f}s")
    np.savez(cache, key=key, texts=text_vectors, questions=question_vectors)
    return texts, text_vectors, question_vectors[: args.queries]


def corpus(texts: list[str], real: np.ndarray, n: int, seed: int) -> tuple[list[str], np.ndarray]:
    """n passages: the real ones first (shuffled), then blends of two real ones."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(texts))
    take = order[: min(n, len(texts))]
    out_texts = [texts[i] for i in take]
    out = [real[take]]
    extra = n - len(take)
    if extra > 0:
        a, b = rng.integers(0, len(texts), extra), rng.integers(0, len(texts), extra)
        blend = real[a] + real[b]
        blend /= np.linalg.norm(blend, axis=1, keepdims=True)
        out.append(blend.astype(np.float32))
        out_texts += [f"{texts[i]} {texts[j]}" for i, j in zip(a, b, strict=True)]
    return out_texts, np.concatenate(out)


def _vector_text(row: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in row) + "]"


def subjects(texts: list[str], real: np.ndarray) -> dict[str, tuple[list[str], np.ndarray]]:
    return {f"s{n}": corpus(texts, real, n, seed=n) for n in SIZES}


def build(db: str, data: dict[str, tuple[list[str], np.ndarray]]) -> None:
    import psycopg

    size = f"{SIZE_TAG}-" + "-".join(f"{k}:{len(v[0])}" for k, v in data.items())
    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), db), autocommit=True) as conn:
        if built(conn, db=db, slug="bench-prefilter", size=size):
            return
        started = time.perf_counter()
        cur = conn.cursor()
        cur.execute("SET maintenance_work_mem = '512MB'")
        cur.execute("DROP INDEX IF EXISTS passage_embedding_hnsw")
        now = datetime.now(UTC)
        mine, other = uuid.uuid4(), uuid.uuid4()
        _copy(cur, "tenants_tenant", ["id", "name", "slug", "active", "settings", "created_at", "has_entity_aliases"], [
            (mine, "Bench prefilter", "bench-prefilter", True, json.dumps({"bench_size": size}), now, False),
            (other, "Bench other", "bench-prefilter-other", True, "{}", now, False),
        ])  # fmt: skip
        owners = [(mine, name, texts, vecs) for name, (texts, vecs) in data.items()]
        owners.append((other, "s10000", *data["s10000"]))
        sessions = []
        for tenant_id, subject, texts, _ in owners:
            sessions += [(tenant_id, f"{subject}-{k}", subject, "", "ended", now - timedelta(days=400), 0, "", now)
                         for k in range((len(texts) + 99) // 100)]  # fmt: skip
        _copy(cur, "episodic_session",
              ["tenant_id", "external_id", "subject", "agent", "status", "started_at", "episode_count", "summary", "created_at"],
              sessions)  # fmt: skip
        session_ids = {(t, e): i for i, t, e in cur.execute("SELECT id, tenant_id, external_id FROM episodic_session")}
        next_id = 1
        for tenant_id, subject, texts, vecs in owners:
            n = len(texts)
            ids = range(next_id, next_id + n)
            next_id += n
            when = [now - timedelta(minutes=n - i) for i in range(n)]
            sess = [session_ids[(tenant_id, f"{subject}-{i // 100}")] for i in range(n)]
            _copy(cur, "episodic_episode",
                  ["id", "tenant_id", "session_id", "subject", "agent", "kind", "role", "content", "payload",
                   "entities", "topics", "occurred_at", "created_at", "external_id", "token_count", "content_hash"],
                  ((i, tenant_id, s, subject, "", "message", "user", t, "{}", "{}", "{}", w, now, f"e{i}",
                    len(t.split()), hashlib.sha256(t.encode()).hexdigest())
                   for i, s, t, w in zip(ids, sess, texts, when, strict=True)))  # fmt: skip
            _copy(cur, "episodic_passage",
                  ["id", "tenant_id", "episode_id", "session_id", "subject", "occurred_at", "position", "char_start",
                   "char_end", "last", "content", "token_count", "entities", "topics", "embedding"],
                  ((i, tenant_id, i, s, subject, w, 0, 0, len(t), True, t, len(t.split()), "{}", "{}", _vector_text(v))
                   for i, s, t, w, v in zip(ids, sess, texts, when, vecs, strict=True)))  # fmt: skip
            print(f"{subject}: {n} passages at {time.perf_counter() - started:.0f}s", flush=True)
        for table in ("episodic_episode", "episodic_passage", "episodic_session"):
            cur.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        cur.execute(
            "CREATE INDEX passage_embedding_hnsw ON episodic_passage USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        print(f"HNSW built at {time.perf_counter() - started:.0f}s", flush=True)
        cur.execute("VACUUM ANALYZE")
        print(f"built in {time.perf_counter() - started:.0f}s", flush=True)


def prewarm(db: str) -> str:
    import psycopg

    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), db), autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        for (name,) in conn.execute(
            "SELECT c.oid::regclass::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') AND c.relname LIKE 'episodic_passage%%' "
            "UNION ALL SELECT i.indexrelid::regclass::text FROM pg_index i "
            "WHERE i.indrelid = 'episodic_passage'::regclass "
            "UNION ALL SELECT t.oid::regclass::text FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid "
            "WHERE c.relname = 'episodic_passage'"
        ).fetchall():
            conn.execute("SELECT pg_prewarm(%s)", [name])
        sizes = conn.execute(
            "SELECT pg_size_pretty(pg_relation_size('episodic_passage')),"
            " pg_size_pretty(pg_total_relation_size('episodic_passage') - pg_indexes_size('episodic_passage')"
            " - pg_relation_size('episodic_passage')),"
            " pg_size_pretty(pg_relation_size('passage_subject_codes')), current_setting('shared_buffers'),"
            " current_setting('jit'), current_setting('max_parallel_workers_per_gather')"
        ).fetchone()
        assert sizes is not None
        return (
            f"passage heap {sizes[0]} (+ {sizes[1]} TOAST), passage_subject_codes {sizes[2]}; "
            f"shared_buffers {sizes[3]}, jit {sizes[4]}, max_parallel_workers_per_gather {sizes[5]}"
        )


def _backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# (label, ENGRAM_VECTOR_PREFILTER_CANDIDATES, HNSW index present)
MODES = (
    ("planner's choice", 0, True),
    ("exact scan", 0, False),
    *((f"prefilter {n}", n, True) for n in (200, 400, 800)),
)
# The channel's pool: the API's default (100), and the router's at max_tokens 4000 (4000 // 12).
POOLS = (100, 333)


def statements(
    db: str, data: dict[str, tuple[list[str], np.ndarray]], queries: np.ndarray
) -> dict[tuple[str, int, int], list[str]]:
    """The vector channel's statement for each subject, setting and query, as passage_search_rows
    sends it (the application role, row-level security in force)."""
    os.environ.update(_db_env(db))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from episodic.selectors import passage_search_rows
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    tenant = Tenant.objects.get(slug="bench-prefilter")
    out: dict[tuple[str, int, int], list[str]] = {}
    for subject in data:
        for candidates in sorted({m[1] for m in MODES}):
            settings.ENGRAM = {**settings.ENGRAM, "VECTOR_PREFILTER_CANDIDATES": candidates}
            for pool in POOLS:
                caught_all = []
                for vector in queries:
                    with tenant_scope(tenant), CaptureQueriesContext(connection) as caught:
                        passage_search_rows(tenant=tenant, query="", subject=subject, limit=pool,
                                            query_embedding=[float(x) for x in vector])  # fmt: skip
                    (statement,) = [
                        c["sql"] for c in caught.captured_queries if "<=>" in c["sql"] and "LIMIT" in c["sql"]
                    ]
                    caught_all.append(statement)
                out[(subject, candidates, pool)] = caught_all
    connection.close()
    return out


def measure(
    args: argparse.Namespace, data: dict[str, tuple[list[str], np.ndarray]], queries: np.ndarray
) -> list[dict[str, Any]]:
    """Each mode's statements, run on one connection of the application role (the owner's session
    switched to it, so that the exact scan can be measured without the HNSW index: dropped in a
    transaction that is rolled back), warm-up round first."""
    import psycopg

    caught = statements(args.db, data, queries)
    app_role = urlparse(_env("DATABASE_URL")).username
    rows = []
    with psycopg.connect(_with_db(_env("DATABASE_OWNER_URL"), args.db)) as conn:
        (tenant,) = conn.execute("SELECT id FROM tenants_tenant WHERE slug = 'bench-prefilter'").fetchone()  # type: ignore[misc]
        conn.commit()
        pid = conn.info.backend_pid
        for subject, (_, vecs) in data.items():
            ids = np.asarray([r[0] for r in conn.execute(
                "SELECT id FROM episodic_passage WHERE tenant_id = %s AND subject = %s ORDER BY id", [tenant, subject]
            )])  # fmt: skip
            conn.commit()
            truth = np.argsort(-(queries @ vecs.T), axis=1, kind="stable")[:, : max(POOLS)]
            for (label, candidates, hnsw), pool in ((m, p) for p in POOLS for m in MODES):
                with conn.transaction(force_rollback=True):
                    if not hnsw:
                        conn.execute("DROP INDEX passage_embedding_hnsw")
                    conn.execute(f'SET LOCAL ROLE "{app_role}"')
                    conn.execute("SELECT set_config('app.tenant_id', %s, true),"
                                 " set_config('hnsw.iterative_scan', 'relaxed_order', true),"
                                 " set_config('hnsw.ef_search', %s, true),"
                                 " set_config('max_parallel_workers_per_gather', '0', true)",
                                 [str(tenant), str(max(100, min(1000, pool)))])  # fmt: skip
                    times, cpus, buffers, overlaps, pooled, plans, walls = [], [], [], [], [], set(), []
                    for round_ in range(2):  # the first round warms up
                        for q, statement in enumerate(caught[(subject, candidates, pool)]):
                            cpu_before, started = _backend_cpu(pid), time.perf_counter()
                            found = conn.execute(statement).fetchall()  # type: ignore[call-overload]
                            wall, cpu = (time.perf_counter() - started) * 1000, (_backend_cpu(pid) - cpu_before) * 1000
                            if round_ == 0:
                                continue
                            leaked = [i for i, _ in found if i not in set(ids.tolist())]
                            assert not leaked, f"rows of another subject or tenant: {leaked[:5]}"
                            walls.append(wall)
                            cpus.append(cpu)
                            overlaps.append(len({i for i, _ in found[:10]} & set(ids[truth[q, :10]].tolist())) / 10)
                            nearest = set(ids[truth[q, :pool]].tolist())
                            pooled.append(len({i for i, _ in found[:pool]} & nearest) / min(pool, len(ids)))
                            explained = conn.execute(  # type: ignore[call-overload]
                                f"EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) {statement}"
                            ).fetchone()[0]
                            top = explained[0] if isinstance(explained, list) else json.loads(explained)[0]
                            times.append(top["Execution Time"])
                            plan = top["Plan"]
                            buffers.append(plan.get("Shared Hit Blocks", 0) + plan.get("Shared Read Blocks", 0))
                            plans.add(_plan_summary(plan) + (" + JIT" if "JIT" in top else ""))
                row = {
                    "subject": subject,
                    "passages": len(vecs),
                    "mode": label,
                    "pool": pool,
                    "recall_pool": statistics.fmean(pooled),
                    "exec_p50": statistics.median(times),
                    "exec_mean": statistics.fmean(times),
                    "wall_p50": statistics.median(walls),
                    "cpu_mean": statistics.fmean(cpus),
                    "buffers": statistics.median(buffers),
                    "recall": statistics.fmean(overlaps),
                    "recall_min": min(overlaps),
                    "plans": sorted(plans),
                }
                rows.append(row)
                print(f"{len(vecs):>6} {pool:>4} {label:>17}  exec p50 {row['exec_p50']:7.2f} ms  cpu {row['cpu_mean']:6.2f} ms  "
                      f"buffers {row['buffers']:6.0f}  recall@10 {row['recall']:.3f} (worst {row['recall_min']:.1f}) "
                      f"@pool {row['recall_pool']:.3f}  "
                      f"{'; '.join(row['plans'])}", flush=True)  # fmt: skip
    return rows


def _plan_summary(plan: dict[str, Any]) -> str:
    """The scans of passages that ran, each kind once (a branch gated off by a one-time filter never
    runs), and the parallel workers if any."""

    def walk(node: dict[str, Any]) -> list[str]:
        if node.get("Actual Loops", 1) == 0:
            return []
        here = []
        if node["Node Type"].startswith("Gather"):
            here.append(f"{node.get('Workers Launched', 0)} parallel workers")
        if "Scan" in node["Node Type"] and node.get("Relation Name") == "episodic_passage":
            here.append(
                node["Node Type"].replace(" Scan", "") + (f" {node['Index Name']}" if "Index Name" in node else "")
            )
        return here + [s for child in node.get("Plans", []) for s in walk(child)]

    return ", ".join(dict.fromkeys(walk(plan)))


def report(args: argparse.Namespace, rows: list[dict[str, Any]], command: str, info: str, n_real: int) -> str:
    lines = [
        "# The vector channel: exact scan against the binary-quantized prefilter",
        "",
        f"Produced by `{command}` on {datetime.now(UTC):%Y-%m-%d}, 2 CPU cores shared with other work; {info}.",
        "",
        f"Data: one tenant with subjects of {', '.join(f'{n:,}' for n in SIZES)} passages, and another tenant "
        f"with a copy of the 10,000 (the HNSW index holds every tenant's). Vectors: all-MiniLM-L6-v2 (ONNX) "
        f"of the {n_real:,} LoCoMo texts (turns, observations, event and session summaries); past that, "
        f"blends of two of them (normalised sums). Queries: {args.queries} LoCoMo questions, embedded the "
        "same way.",
        "",
        "Each query goes through `passage_search_rows` (no words, so its order is the vector channel's) as "
        "the application role, and the vector channel's statement is caught; the statements are then run on "
        "one connection of the application role (row-level security in force), timed (wall from the client, "
        "CPU of the server process from /proc) and under EXPLAIN (ANALYZE, BUFFERS, TIMING OFF), after a "
        "warm-up round, with parallel query off so that all of a statement's CPU is that process's (on "
        "2 cores serving concurrent requests, workers add no capacity). Modes: *planner's choice* is today's statement as the planner runs it on this "
        "database; *exact scan* is the same statement without the HNSW index (dropped in a transaction "
        "that is rolled back), which is the plan a subject gets when it is a small share of a big table "
        "(the HNSW scan, filtered to one subject, would walk most of the graph); *prefilter N* is "
        "ENGRAM_VECTOR_PREFILTER_CANDIDATES=N (N candidates per 100 of the pool). pool: the rows the channel "
        "returns (100, the API's default; 333, the router's at max_tokens 4000). recall@10: the share of the "
        "10 nearest passages (numpy, brute force over the subject's vectors) among the channel's first 10, "
        "mean and worst query; recall@pool: the same for the whole pool.",
        "",
        "| passages | pool | vector channel | execution p50 ms | execution mean ms | wall p50 ms | CPU ms | "
        "buffers | recall@10 | worst | recall@pool | scans that ran |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['passages']:,} | {r['pool']} | {r['mode']} | {r['exec_p50']:.2f} | {r['exec_mean']:.2f} | "
            f"{r['wall_p50']:.2f} | {r['cpu_mean']:.2f} | {r['buffers']:.0f} | {r['recall']:.3f} | "
            f"{r['recall_min']:.1f} | {r['recall_pool']:.3f} | {'; '.join(r['plans'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_bench_prefilter")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--cache", default="/tmp/engram_bench_prefilter_vectors.npz")  # noqa: S108
    parser.add_argument("--no-doc", action="store_true", help="print only; do not write the docs page")
    args = parser.parse_args()
    command = "python bench/vector_prefilter.py" + (f" {shlex.join(sys.argv[1:])}" if sys.argv[1:] else "")
    texts, real, queries = vectors(args)
    data = subjects(texts, real)
    prepare(args.db)
    build(args.db, data)
    info = prewarm(args.db)
    print(info)
    rows = measure(args, data, queries)
    if not args.no_doc:
        DOC.write_text(report(args, rows, command, info, len(texts)) + _findings_marker())
        print(f"wrote {DOC.relative_to(ROOT)}")


def _findings_marker() -> str:
    # The reading of the figures is written by hand below the table and kept across runs.
    if DOC.is_file():
        text = DOC.read_text()
        at = text.find("\n## Reading\n")
        if at >= 0:
            return text[at:]
    return ""


if __name__ == "__main__":
    main()

"""CPU per context request of two versions of the code, measured at the same time on the same data.

    .venv/bin/python bench/context_cpu_ab.py --before 3babd30 --db engram_bench_mid --episodes 100000 \
        --facts 10000 --subjects 10

This machine's speed swings by up to 2x within a day, and by 10-15% between two runs a minute apart:
runs one after the other cannot show a change of a few percent. Here both versions run at once, one
process each, on the data of bench/context_latency.py (built with --build-only and the same size
arguments), so that whatever the machine does it does to both: each round starts the two processes
together and reports the ratio of their CPU per request; the table gives every round and the median.

CPU per request is that of the process (all its threads: the request's, the reader beside it, the
trace writer) and of its own PostgreSQL backends (read from /proc by their pids, so that the other
version's backends do not count), over --requests calls of router.services.context_build with the
same requests in the same order for both. With --new-query the query is embedded on the request path;
by default its vector is cached first, so that the ratio is that of everything but the model call
(bench/embedding_engines.py measures the model).

`--before REV` is checked out into a temporary worktree (its `.data` linked to this checkout's, for the
embedding model's file); `--after` is this checkout unless given. Writes
docs/benchmarks/context_cpu_ab.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_breakdown import _check_data, request_maker  # noqa: E402
from context_latency import ROOT, _db_env, add_data_arguments  # noqa: E402


def _backend_cpu(pids: set[int]) -> float:
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(") ")[2].split()
        except OSError:  # the backend ended
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def worker(args: argparse.Namespace) -> None:
    """One version's measurement, in a process of its own whose imports come from --root."""
    root = Path(args.root).resolve()
    # Celery's Django fix-up puts the working directory first on sys.path: it must be the version's.
    os.chdir(root)
    sys.path.insert(0, str(root))
    os.environ.update({**_db_env(args.db), "DJANGO_DEBUG": "false"})
    import django

    django.setup()
    from django.db.backends.signals import connection_created

    pids: set[int] = set()

    def remember(sender, connection, **kwargs):  # type: ignore[no-untyped-def]
        with connection.connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            pids.add(cursor.fetchone()[0])

    connection_created.connect(remember, weak=False)
    from core.embedding import embed_one
    from router.services import context_build
    from router.types import ContextRequest
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    if args.set:
        from context_cpu_http import SETS, dense_subjects, questions

        tenant = Tenant.objects.get(slug=SETS[args.set])
        subjects = dense_subjects(args.db) if args.set == "locomo-dense" else None
        path = list(sys.path)
        pairs = questions(args.set, 0, subjects)
        sys.path[:] = path  # questions() puts this checkout first; the version's modules come from --root

        def request(i: int) -> ContextRequest:
            subject, query = pairs[i % len(pairs)]
            budget = args.max_tokens
            return ContextRequest(
                subject=subject, query=query, max_tokens=budget, budgets={"reserve": 0, "episodic": budget}
            )
    else:
        tenant = Tenant.objects.get(slug="bench-big")
        request = request_maker(args)

    def run(body: ContextRequest) -> None:
        with tenant_scope(tenant):
            context_build(tenant=tenant, request=body)

    for i in range(20):  # the model loaded, connections open, helper threads started
        run(request(-1 - i))
    bodies_offset = args.offset
    bodies = [request(bodies_offset + i) for i in range(args.requests)]
    if not args.new_query:
        for body in bodies:
            embed_one(body.query)
    pg, cpu, wall = _backend_cpu(pids), time.process_time(), time.perf_counter()
    for body in bodies:
        run(body)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    time.sleep(0.5)  # the last trace write
    pg = _backend_cpu(pids) - pg
    n = args.requests
    print(json.dumps({"process_ms": cpu * 1000 / n, "postgres_ms": pg * 1000 / n, "wall_ms": wall * 1000 / n}))


def _worktree(rev: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix="engram-ab-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path), rev], check=True)
    (path / ".data").symlink_to(ROOT / ".data")
    return path


def measure(args: argparse.Namespace, before: Path, after: Path) -> list[dict[str, dict[str, float]]]:
    common = [
        "--db", args.db, "--tenants", str(args.tenants), "--episodes", str(args.episodes),
        "--facts", str(args.facts), "--subjects", str(args.subjects),
        "--sessions-per-subject", str(args.sessions_per_subject), "--small-episodes", str(args.small_episodes),
        "--small-facts", str(args.small_facts), "--requests", str(args.requests),
        "--max-tokens", str(args.max_tokens), *(["--new-query"] if args.new_query else []),
        *(["--set", args.set] if args.set else []),
    ]  # fmt: skip
    rounds = []
    worker_command = [sys.executable, __file__, "--worker", "--root"]
    for index in range(args.rounds):
        procs = {
            name: subprocess.Popen(
                # Each round asks the next questions of the set (the same for both versions).
                [*worker_command, str(root), *common, "--offset", str(index * args.requests)],
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            for name, root in (("before", before), ("after", after))
        }
        result = {}
        for name, proc in procs.items():
            out, _ = proc.communicate(timeout=1800)
            if proc.returncode != 0:
                sys.exit(f"the {name} worker failed (exit {proc.returncode})")
            result[name] = json.loads(out.strip().splitlines()[-1])
        rounds.append(result)
        b, a = result["before"], result["after"]
        print(
            f"round {index + 1}: before {b['process_ms']:.1f} + {b['postgres_ms']:.1f} ms, "
            f"after {a['process_ms']:.1f} + {a['postgres_ms']:.1f} ms",
            flush=True,
        )
    return rounds


def report(args: argparse.Namespace, rounds: list[dict[str, dict[str, float]]], command: str, before: str) -> str:
    def ratio(r: dict[str, dict[str, float]], key: str) -> float:
        if key == "total":
            return (r["after"]["process_ms"] + r["after"]["postgres_ms"]) / (
                r["before"]["process_ms"] + r["before"]["postgres_ms"]
            )
        return r["after"][key] / r["before"][key]

    lines = [
        "# CPU per context request, two versions at once",
        "",
        f"Produced by `{command}` on {datetime.now(UTC):%Y-%m-%d}, 2 CPU cores. Before: `{before}`; after: "
        f"`{args.after or 'this checkout'}`. "
        + (
            f"Tenant of set `{args.set}` in `{args.db}`, the set's questions (bench/context_cpu_http.py), the next "
            f"{args.requests} each round; budgets {{reserve: 0, episodic: {args.max_tokens}}}, "
            if args.set
            else f"Data of bench/context_latency.py: {args.episodes:,} episodes and "
            f"{args.facts:,} facts over {args.subjects} subjects in a database of {args.tenants} tenants; max_tokens "
            f"{args.max_tokens}; {args.requests} requests a round, "
        )
        + ("the query embedded on the request path." if args.new_query else "the query's vector cached first.")
        + " Both versions run at the same time, one process each (module docstring).",
        "",
        "| round | before: process ms | before: PostgreSQL ms | after: process ms | after: PostgreSQL ms | after / before |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(rounds, start=1):
        b, a = r["before"], r["after"]
        lines.append(
            f"| {i} | {b['process_ms']:.1f} | {b['postgres_ms']:.1f} | {a['process_ms']:.1f} | "
            f"{a['postgres_ms']:.1f} | {ratio(r, 'total'):.3f} |"
        )
    med = {k: statistics.median(ratio(r, k) for r in rounds) for k in ("process_ms", "postgres_ms", "total")}
    lines += [
        "",
        f"Median ratio after / before: process {med['process_ms']:.3f}, PostgreSQL {med['postgres_ms']:.3f}, "
        f"together {med['total']:.3f}.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(parser)
    parser.add_argument("--before", help="a git revision of the version to compare against")
    parser.add_argument("--after", help="the root of the version under test (default: this checkout)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--max-tokens", type=int, default=4000)
    parser.add_argument("--new-query", action="store_true", help="embed each query on the request path")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks" / "context_cpu_ab.md"))
    parser.add_argument(
        "--set",
        default="",
        help="an evaluation's tenant instead of bench/context_latency.py's data: the set's questions "
        "(bench/context_cpu_http.py's sets), budgets {reserve: 0, episodic: --max-tokens}",
    )
    parser.add_argument("--offset", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if not args.before:
        parser.error("--before REV is required")
    if not args.set:
        _check_data(args)
    command = ("bench/context_cpu_ab.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])).strip()
    before = _worktree(args.before)
    after = Path(args.after).resolve() if args.after else ROOT
    try:
        rounds = measure(args, before, after)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before)], check=False)
        shutil.rmtree(before.parent, ignore_errors=True)
    text = report(args, rounds, command, args.before)
    Path(args.output).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

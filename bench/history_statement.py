"""What history's pool costs the database: the statements a context request sends to rank its history,
caught as the router sends them and run again on an evaluation's tenant, under EXPLAIN (ANALYZE) and
as sent, with the backend's CPU read from /proc.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/history_statement.py --db engram_rp2_c1 --conversations 1 --budget 1000
    .venv/bin/python bench/history_statement.py --db engram_rp2_c1 --conversations 1 --plan 3   # print a plan

For each question (bench/context_cpu_http.py's order), router.services.context_build runs once with the
query's vector computed beforehand; every statement sent while the episodic candidates fetch their
pool and their sessions' summaries (router.candidates.episodic's `episode_hits` and
`summary_candidates`, whichever reads the database in the checkout at hand) is kept with its
parameters bound, so that a checkout with separate statements and one with a fused statement are
measured alike. They are then run `--repeat` times in order in one transaction in the tenant's scope,
the SET LOCAL commands as they are, the others under EXPLAIN (ANALYZE, TIMING OFF), and the fastest
sum of planning and of execution times is kept; then the batches are sent again as the router sent
them, `--repeat` times, and the backend's CPU (schedstat: parse, plan, execute, send) is averaged.
Reports the median over the questions of each, and the plans of question `--plan` with BUFFERS when
asked (or its statements written to `--dump`).

To compare checkouts against the same load, each writes its batches (`--dump FILE --repeat 1`, from
its own worktree), and one run sends them all, taking turns question by question:

    .venv/bin/python bench/history_statement.py --db engram_rp2_c1 --conversations 1 --questions 12 --repeat 1 --dump /tmp/a.sql
    .venv/bin/python bench/history_statement.py --db engram_rp2_c1 --repeat 9 --compare /tmp/a.sql /tmp/b.sql
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_cpu_http import SETS, dense_subjects, questions, reference_loop_ms  # noqa: E402
from context_latency import ROOT, _db_env  # noqa: E402

sys.path.insert(0, str(ROOT))

_SET_LOCAL = re.compile(r"^SET LOCAL [a-z_.]+ = '[^']*'$")
_TIMES = re.compile(r"(Planning|Execution) Time: ([0-9.]+) ms")


def _split(batch: str) -> tuple[list[str], list[str]]:
    """The SET LOCAL commands in front of a batch, and its statements (split where one ends and the
    next begins with WITH or SELECT)."""
    parts = batch.split("; ")
    settings = [p for p in parts if _SET_LOCAL.match(p)]
    statements: list[str] = []
    for part in parts[len(settings) :]:
        if statements and not re.match(r"^(WITH|SELECT|\()", part):
            statements[-1] += "; " + part
        else:
            statements.append(part)
    return settings, statements


def _backend_ns(schedstat: Path) -> int:
    return int(schedstat.read_text().split()[0])


def _run_batches(batches: list[str], schedstat: Path) -> int:
    """Send `batches` as the router sent them, in one transaction, reading every result; the backend's CPU
    (ns) it took."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        before = _backend_ns(schedstat)
        for batch in batches:
            cursor.execute(batch)
            while True:
                if cursor.description is not None:
                    cursor.fetchall()
                if not cursor.nextset():
                    break
        return _backend_ns(schedstat) - before


def compare(args: argparse.Namespace) -> None:
    """The batches of several --dump files sent again on one connection, the files taking turns
    question by question for `--repeat` rounds: per file, the backend's CPU for each question
    (median of the rounds), summed over the questions. Checkouts measured in one run, against the
    same machine's load."""
    import django

    django.setup()
    from django.db import connection

    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    tenant = Tenant.objects.get(slug=SETS[args.set])
    dumps = {}
    for name in args.compare:
        parts = re.split(r"^-- question \d+\n", Path(name).read_text(), flags=re.MULTILINE)
        dumps[name] = [[b for b in part.split(";\n") if b.strip()] for part in parts if part.strip()]
    counts = {len(questions_) for questions_ in dumps.values()}
    if len(counts) != 1:
        sys.exit(f"The files hold different numbers of questions: {sorted(counts)}")
    (count,) = counts
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    schedstat = Path(f"/proc/{backend}/schedstat")
    spent: dict[str, list[list[float]]] = {name: [[] for _ in range(count)] for name in dumps}
    with tenant_scope(tenant):
        for _ in range(args.repeat):
            for question in range(count):
                for name, questions_ in dumps.items():
                    spent[name][question].append(_run_batches(questions_[question], schedstat) / 1e6)
    print(
        f"{count} questions, {args.repeat} rounds, the backend's CPU per question (median of the rounds), "
        f"summed (reference loop {reference_loop_ms():.1f} ms; loaded machine):"
    )
    for name, per_question in spent.items():
        total = sum(statistics.median(samples) for samples in per_question)
        print(f"  {name}: {total:.1f} ms, {total / count:.2f} ms a question")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--set", choices=sorted(SETS), default="locomo")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--questions", type=int, default=30)
    parser.add_argument("--conversations", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--plan", type=int, default=-1, help="print the plan of this question (0-based)")
    parser.add_argument(
        "--dump", default="", help="write the statements of question --plan (without --plan: of all) to this file"
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        default=[],
        help="files written by --dump (one per checkout): send their batches again, interleaved question by question",
    )
    args = parser.parse_args()
    os.environ.update(_db_env(args.db))
    if args.compare:
        compare(args)
        return
    subjects = dense_subjects(args.db) if args.set == "locomo-dense" else None
    pairs = questions(args.set, args.conversations, subjects)[: args.questions]

    from django.db import connection, transaction

    from core.embedding import embed_one
    from router.services import context_build
    from router.types import ContextRequest
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    tenant = Tenant.objects.get(slug=SETS[args.set])
    for _, query in pairs:
        embed_one(query)

    import router.candidates.episodic as episodic_candidates

    caught: list[str] = []
    catching = False

    def catch(execute: Any, sql: str, params: Any, many: bool, context: dict[str, Any]) -> Any:
        if catching and not many:
            caught.append(connection.ops.compose_sql(sql, params) if params else sql)  # type: ignore[attr-defined]
        return execute(sql, params, many, context)

    def catching_in(function: Any) -> Any:
        def wrapped(*a: Any, **k: Any) -> Any:
            nonlocal catching
            catching = True
            try:
                return function(*a, **k)
            finally:
                catching = False

        return wrapped

    for name in ("episode_hits", "summary_candidates"):
        setattr(episodic_candidates, name, catching_in(getattr(episodic_candidates, name)))

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (backend,) = cursor.fetchone()
    schedstat = Path(f"/proc/{backend}/schedstat")

    results: list[tuple[float, float, float]] = []
    for index, (subject, query) in enumerate(pairs):
        caught.clear()
        request = ContextRequest(
            subject=subject, query=query, max_tokens=args.budget, budgets={"reserve": 0, "episodic": args.budget}
        )
        with tenant_scope(tenant), connection.execute_wrapper(catch):
            context_build(tenant=tenant, request=request)
        if not caught:
            continue
        batches = list(caught)
        settings: list[str] = []
        statements: list[str] = []
        for batch in batches:
            batch_settings, batch_statements = _split(batch)
            settings += batch_settings
            statements += batch_statements
        if args.dump and index == args.plan:
            Path(args.dump).write_text(";\n".join([*settings, *statements]) + ";\n")
        elif args.dump and args.plan < 0:
            with Path(args.dump).open("a") as out:
                out.write(f"-- question {index}\n" + "".join(f"{batch};\n" for batch in batches))
        best_planning, best_execution = float("inf"), float("inf")
        with tenant_scope(tenant):
            for attempt in range(args.repeat):
                planning = execution = 0.0
                with transaction.atomic(), connection.cursor() as cursor:
                    for command in settings:
                        cursor.execute(command)
                    for statement in statements:
                        cursor.execute(f"EXPLAIN (ANALYZE, TIMING OFF) {statement}")
                        for (line,) in cursor.fetchall():
                            for kind, ms in _TIMES.findall(line):
                                if kind == "Planning":
                                    planning += float(ms)
                                else:
                                    execution += float(ms)
                    if index == args.plan and attempt == args.repeat - 1 and not args.dump:
                        for statement in statements:
                            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {statement}")
                            print("\n".join(line for (line,) in cursor.fetchall()))
                best_planning = min(best_planning, planning)
                best_execution = min(best_execution, execution)
            # The backend's CPU for the batches as the router sent them (parse, plan, execute, send).
            backend_ns = 0
            for _ in range(args.repeat):
                backend_ns += _run_batches(batches, schedstat)
        results.append((best_planning, best_execution, backend_ns / args.repeat / 1e6))
    planning = statistics.median(r[0] for r in results)
    execution = statistics.median(r[1] for r in results)
    backend = statistics.median(r[2] for r in results)
    print(
        f"{len(results)} questions at {args.budget} tokens on {args.db}, median over the questions: "
        f"EXPLAIN fastest of {args.repeat}: planning {planning:.2f} ms, execution {execution:.2f} ms, "
        f"sum {planning + execution:.2f} ms; backend CPU, mean of {args.repeat}: {backend:.2f} ms "
        f"(reference loop {reference_loop_ms():.1f} ms; loaded machine)"
    )


if __name__ == "__main__":
    main()

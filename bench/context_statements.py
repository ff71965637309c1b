"""PostgreSQL's side of a context request, statement by statement: each statement's backend CPU.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/context_statements.py --db engram_locomo_base_copy --set locomo --budget 1000

Calls router.services.context_build in process (as bench/context_profile.py does: the set's questions
in bench/context_cpu_http.py's order, each query's vector computed before the clock starts) with every
statement Django sends, on any thread (the request's, the reader beside it, the trace's writer),
timed by its own backend: the backend's time on the CPU (/proc/<pid>/schedstat, nanoseconds) before
and after the statement, and the statement's wall time from the client. Statements are grouped by the
function of this project that sent them (the innermost frame outside core.db and Django) and the
statement's first words; what the backends spent outside statements (commits, the session's end) is
the row "between statements". pg_stat_statements would need the server's preload setting, which
this shared server does not have.

Reading /proc around each statement slows the client, not the backends: the backends' figures are what
this measures.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_cpu_http import SETS, questions, reference_loop_ms  # noqa: E402
from context_latency import ROOT, _db_env  # noqa: E402

sys.path.insert(0, str(ROOT))

_SET_LOCAL = re.compile(r"^(\s*SET LOCAL [^;]+;\s*)+", re.IGNORECASE)
_SAVEPOINT = re.compile(r'"s\d+_x\d+"')
_OURS = ("episodic", "semantic", "procedural", "router", "tenants", "api", "working", "core")


def _on_cpu_ns(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except OSError:  # the backend ended
        return 0


def _caller() -> str:
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename
        rel = os.path.relpath(path, ROOT) if path.startswith(str(ROOT)) else ""
        if rel and rel.split(os.sep)[0] in _OURS and not rel.startswith(os.path.join("core", "db.py")):
            return f"{rel.removesuffix('.py').replace(os.sep, '.')}.{frame.f_code.co_name}"
        frame = frame.f_back  # type: ignore[assignment]
    return "(django)"


def _head(sql: str) -> str:
    settings = bool(_SET_LOCAL.match(sql))
    body = " ".join(_SET_LOCAL.sub("", sql).split())
    words = _SAVEPOINT.sub('"…"', body)[:60]
    return ("[SET LOCAL +] " if settings else "") + words


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--set", choices=sorted(SETS), default="locomo")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--dump", default="", help="write the first timed request's statements, as sent, here")
    args = parser.parse_args()

    os.environ.update({**_db_env(args.db), "DJANGO_DEBUG": "false"})
    import django

    django.setup()
    from django.db.backends import utils

    stats: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    lock = threading.Lock()
    pids: set[int] = set()
    measuring = threading.Event()
    dumped: list[str] | None = None
    original = utils.CursorWrapper._execute

    def timed(self: Any, sql: str, params: Any, *ignored: Any) -> Any:
        if not measuring.is_set():
            return original(self, sql, params, *ignored)
        pid = self.db.connection.info.backend_pid
        key = (_caller(), _head(sql))
        before, wall = _on_cpu_ns(pid), time.perf_counter()
        try:
            return original(self, sql, params, *ignored)
        finally:
            wall = time.perf_counter() - wall
            spent = _on_cpu_ns(pid) - before
            with lock:
                if dumped is not None and len(dumped) < 40:
                    sent = getattr(getattr(self.cursor, "_query", None), "query", None)
                    dumped.append(sent.decode() if isinstance(sent, bytes) else sql)
                pids.add(pid)
                entry = stats[key]
                entry[0] += 1
                entry[1] += spent / 1e6
                entry[2] += wall * 1000

    utils.CursorWrapper._execute = timed  # type: ignore[method-assign]

    from core.embedding import embed_one
    from router.services import context_build
    from router.types import ContextRequest
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    tenant = Tenant.objects.get(slug=SETS[args.set])
    pairs = questions(args.set)

    def body(i: int) -> ContextRequest:
        subject, query = pairs[i % len(pairs)]
        return ContextRequest(
            subject=subject,
            query=query,
            max_tokens=args.budget,
            budgets={"reserve": 0, "episodic": args.budget},
        )

    def run(request: ContextRequest) -> None:
        with tenant_scope(tenant):
            context_build(tenant=tenant, request=request)

    for i in range(args.warmup):
        run(body(-1 - i))
    timed_bodies = [body(i) for i in range(args.requests)]
    for request in timed_bodies:
        embed_one(request.query)
    # The backends of every connection the warm-up opened (the request's, the reader's, the writer's).
    measuring.set()
    run(timed_bodies[0])
    time.sleep(0.5)
    with lock:
        stats.clear()
        if args.dump:
            dumped = []
    loop = reference_loop_ms()
    start = {pid: _on_cpu_ns(pid) for pid in pids}
    for request in timed_bodies:
        run(request)
    time.sleep(0.5)  # the last trace's write
    total = sum(_on_cpu_ns(pid) - start.get(pid, 0) for pid in pids) / 1e6
    measuring.clear()
    if args.dump and dumped:
        Path(args.dump).write_text("".join(f"{statement};\n-- next\n" for statement in dumped))
    n = args.requests
    rows = sorted(stats.items(), key=lambda kv: -kv[1][1])
    in_statements = sum(v[1] for v in stats.values())
    print(
        f"{args.set}, {args.budget} tokens, {n} requests; reference loop {loop:.1f} ms; "
        f"backends' CPU {total / n:.2f} ms a request, {sum(v[0] for v in stats.values()) / n:.1f} statements"
    )
    print("| sent by | statement | per request | backend CPU ms a request | wall ms a request |")
    print("|---|---|---:|---:|---:|")
    for (caller, head), (count, cpu, wall) in rows:
        print(f"| `{caller}` | `{head}` | {count / n:.2f} | {cpu / n:.2f} | {wall / n:.2f} |")
    print(f"| between statements (commits, ...) | | | {(total - in_statements) / n:.2f} | |")


if __name__ == "__main__":
    main()

"""Where a context request's CPU goes in Python, on an evaluation's tenant: cProfile over in-process calls.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/context_profile.py --db engram_locomo_r4 --set locomo --budget 1000

Calls router.services.context_build directly (no HTTP) for the set's questions, as bench/context_cpu_http.py
asks them (the same order, subject and budgets), after a warm-up that loads the model and fills the
caches; every query's vector is computed before the clock starts, so the profile is the read path's own.
Reports this process's CPU per request (all threads; PostgreSQL's is bench/context_cpu_http.py's), then
the functions that cost most, by own time and by cumulative time (the request's thread only: cProfile
does not follow the reader threads).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from context_cpu_http import SETS, api_key, questions, reference_loop_ms  # noqa: E402
from context_latency import ROOT, _db_env  # noqa: E402

sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# The parts --parts times: (module where the caller looks the function up, function): what it is. A
# part's time includes the parts it calls (history's candidates include its statements' client side).
PARTS: dict[tuple[str, str], str] = {
    ("router.services", "context_build"): "the request thread's whole build",
    ("router.policy", "episode_candidates"): "history's candidates, all",
    ("router.candidates.episodic", "passage_pool_columns"): "history's pool: statement (client side) and columns",
    ("router.candidates.episodic", "pool_relevance"): "history's relevance on arrays",
    ("router.candidates.episodic", "passage_rows_neighbours"): "the passages beside the best hits",
    ("router.candidates.episodic", "summary_candidates"): "the sessions' summaries",
    ("router.candidates.episodic", "label_updates"): "the earlier statements' labels",
    ("router.candidates.episodic", "latest_candidates"): "the subject's latest events",
    ("router.policy", "settle_episodes"): "settling history",
    ("router.policy", "fact_candidates"): "facts (reader thread)",
    ("router.policy", "procedure_candidates"): "procedures (reader thread)",
    ("router.services", "assemble"): "packing and rendering",
    ("router.services", "item_dict"): "the answer's items",
    ("router.services", "trace_items_record"): "the trace's items (writer thread), all",
    ("router.services", "considered_dicts"): "the trace's left-out rows",
}


def _time_parts() -> dict[tuple[str, str], float]:
    """Wrap each function of PARTS where its caller looks it up; the returned dict sums their thread CPU."""
    import importlib
    import threading

    spent: dict[tuple[str, str], float] = {}
    lock = threading.Lock()
    for module_name, name in PARTS:
        module = importlib.import_module(module_name)
        function = getattr(module, name)

        def timed(*args: object, _f=function, _key=(module_name, name), **kwargs: object) -> object:
            start = time.thread_time()
            try:
                return _f(*args, **kwargs)
            finally:
                with lock:
                    spent[_key] = spent.get(_key, 0.0) + time.thread_time() - start

        setattr(module, name, timed)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--set", choices=sorted(SETS), default="locomo")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--conversations",
        type=int,
        default=0,
        help="only the questions of the set's first K conversations (bench/locomo.py --conversations K)",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile the timed requests")
    parser.add_argument(
        "--whole",
        action="store_true",
        help="the whole Django request (middleware, authentication, view, rendering) through django.test.Client "
        "instead of context_build alone",
    )
    parser.add_argument("--dump", default="", help="with --profile: write the pstats file here")
    parser.add_argument(
        "--parts",
        action="store_true",
        help="the CPU (time.thread_time) of the thread that runs each of a few parts of the request (PARTS), "
        "on whichever thread runs it (the request's, the reader beside it, the trace's writer), per request",
    )
    args = parser.parse_args()
    os.environ.update({**_db_env(args.db), "DJANGO_DEBUG": "false", "LOG_LEVEL": "WARNING"})
    pairs = questions(args.set, args.conversations)[: args.warmup + args.requests]

    from core.embedding import embed_one
    from router import services
    from router.types import ContextRequest
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    tenant = Tenant.objects.get(slug=SETS[args.set])
    spent = _time_parts() if args.parts else None

    def ask(pair: tuple[str, str]) -> None:
        request = ContextRequest(
            subject=pair[0], query=pair[1], max_tokens=args.budget, budgets={"reserve": 0, "episodic": args.budget}
        )
        with tenant_scope(tenant):
            services.context_build(tenant=tenant, request=request)

    if args.whole:
        from django.test import Client

        client = Client(HTTP_AUTHORIZATION=f"Bearer {api_key(args.db, SETS[args.set])}", HTTP_HOST="127.0.0.1")

        def ask(pair: tuple[str, str]) -> None:
            body = {
                "subject": pair[0],
                "query": pair[1],
                "max_tokens": args.budget,
                "budgets": {"reserve": 0, "episodic": args.budget},
            }
            response = client.post("/v1/context", body, content_type="application/json")
            assert response.status_code == 200, response.content[:300]

    for _, query in pairs:
        embed_one(query)
    for pair in pairs[: args.warmup]:
        ask(pair)
    time.sleep(0.2)
    if spent is not None:
        spent.clear()
    timed = pairs[args.warmup :]
    reference = reference_loop_ms()
    # The request thread's own CPU (thread_time), not wall time: waiting on the database and on the
    # helper threads would rank first otherwise.
    profiler = cProfile.Profile(time.thread_time) if args.profile else None
    cpu_before, wall_before = _cpu(), time.perf_counter()
    for pair in timed:
        if profiler is not None:
            profiler.enable()
        ask(pair)
        if profiler is not None:
            profiler.disable()
    time.sleep(0.2)  # the trace's items are written just after the answer
    cpu = _cpu() - cpu_before
    wall = time.perf_counter() - wall_before
    n = len(timed)
    print(
        f"{n} requests at {args.budget} tokens on {args.db}: this process {cpu * 1000 / n:.1f} ms CPU a request, "
        f"wall {wall * 1000 / n:.1f} ms "
        f"(reference loop {reference:.1f} ms{', profiled' if profiler else ''}; loaded machine)"
    )
    if spent is not None:
        print("| part (module.function: what it does) | thread CPU ms a request |\n|---|---:|")
        for (module, name), label in PARTS.items():
            print(
                f"| `{module.rsplit('.', 1)[-1]}.{name}`: {label} | {spent.get((module, name), 0.0) * 1000 / n:.2f} |"
            )
    if profiler is not None and args.dump:
        profiler.dump_stats(args.dump)
    if profiler is not None:
        for key in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(args.top)
            print(out.getvalue())


if __name__ == "__main__":
    main()

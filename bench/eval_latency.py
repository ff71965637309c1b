"""Context latency on short-turn against long-turn LoCoMo, at 1,000 and 4,000 tokens, in one run.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/eval_latency.py           # scratch database engram_router_eval_latency

Runs `manage.py memory_eval latency` in a scratch database of its own: imports and embeds LoCoMo and its
long-turn variant (kept between runs), then asks the same questions of both, the data and the budgets
taking turns request by request; p50 / p95 per request in process and CPU per request (this process and
PostgreSQL). Writes docs/benchmarks/eval_latency.md. Run it alone on the machine: its figures mean
nothing when others share the cores.
"""

from __future__ import annotations

import argparse

from locomo import DATASET, DOCS, ROOT, run_memory_eval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_router_eval_latency")
    parser.add_argument("--budgets", default="1000,4000")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--dataset", default=str(DATASET))
    args = parser.parse_args()
    eval_args = [
        "--dataset", args.dataset, "--budgets", args.budgets, "--rounds", str(args.rounds),
        "--json", str(ROOT / ".data" / "eval_latency.json"), "--report", str(DOCS / "eval_latency.md"),
    ]  # fmt: skip
    run_memory_eval("latency", args.db, eval_args, "bench/eval_latency.py")


if __name__ == "__main__":
    main()

"""Long-turn LoCoMo: passage-level evidence recall of POST /v1/context, by halves, next to the baselines.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/locomo_long.py            # fresh scratch database engram_router_eval_long
    .venv/bin/python bench/locomo_long.py --reuse

Builds the long-turn variant from the LoCoMo file (consecutive turns of a session merged into episodes
of 400-800 tokens, each turn's character span kept), then runs `manage.py memory_eval locomo-long` in a
scratch database of its own. Writes docs/benchmarks/locomo_long.md.
"""

from __future__ import annotations

import argparse

from locomo import DATASET, DOCS, ROOT, run_memory_eval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_router_eval_long")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--budgets", default="1000,2000,4000,8000")
    parser.add_argument("--conversations", type=int, default=0)
    parser.add_argument("--every", type=int, default=1, help="only every K-th question of each conversation")
    parser.add_argument("--dataset", default=str(DATASET))
    args = parser.parse_args()
    eval_args = [
        "--dataset", args.dataset, "--budgets", args.budgets, "--json", str(ROOT / ".data" / "locomo_long.json"),
        "--report", str(DOCS / "locomo_long.md"),
    ]  # fmt: skip
    if args.reuse:
        eval_args.append("--reuse")
    if args.conversations:
        eval_args += ["--conversations", str(args.conversations)]
    if args.every > 1:
        eval_args += ["--every", str(args.every)]
    run_memory_eval("locomo-long", args.db, eval_args, "bench/locomo_long.py")


if __name__ == "__main__":
    main()

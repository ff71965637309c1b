"""Knowledge updates: newer-above-older and stale-only rates of POST /v1/context, by halves.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/updates.py                # fresh scratch database engram_router_eval_updates
    .venv/bin/python bench/updates.py --reuse

Generates the update set (evaluation.knowledge_updates, seeded), then runs `manage.py memory_eval updates`
in a scratch database of its own. Writes docs/benchmarks/updates.md.
"""

from __future__ import annotations

import argparse

from locomo import DOCS, ROOT, run_memory_eval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_router_eval_updates")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--budgets", default="1000,2000,4000,8000")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--conversations", type=int, default=200)
    args = parser.parse_args()
    eval_args = [
        "--budgets", args.budgets, "--seed", str(args.seed), "--conversations", str(args.conversations),
        "--json", str(ROOT / ".data" / "updates.json"), "--report", str(DOCS / "updates.md"),
    ]  # fmt: skip
    if args.reuse:
        eval_args.append("--reuse")
    run_memory_eval("updates", args.db, eval_args, "bench/updates.py")


if __name__ == "__main__":
    main()

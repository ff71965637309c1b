"""Knowledge updates: newer-above-older and stale-only rates of POST /v1/context, by halves.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/updates.py                # fresh scratch database engram_router_eval_updates
    .venv/bin/python bench/updates.py --reuse

Generates the update set (evaluation.knowledge_updates, seeded), then runs `manage.py memory_eval updates`
in a scratch database of its own. Writes docs/benchmarks/updates.md.
"""

from __future__ import annotations

import argparse

from locomo import add_common, common_eval_args, run_memory_eval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(parser, db="engram_router_eval_updates", report="updates.md")
    parser.add_argument("--seed", type=int, default=18)
    parser.set_defaults(conversations=200)
    args = parser.parse_args()
    eval_args = ["--seed", str(args.seed), *common_eval_args(args)]
    run_memory_eval("updates", args.db, eval_args, "bench/updates.py")


if __name__ == "__main__":
    main()

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

from locomo import DATASET, add_common, common_eval_args, run_memory_eval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(parser, db="engram_router_eval_long", report="locomo_long.md")
    parser.add_argument("--dataset", default=str(DATASET))
    args = parser.parse_args()
    run_memory_eval(
        "locomo-long", args.db, ["--dataset", args.dataset, *common_eval_args(args)], "bench/locomo_long.py"
    )


if __name__ == "__main__":
    main()

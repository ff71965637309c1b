"""Technical user-assistant conversations: evidence recall of POST /v1/context through the real write path,
all layers against episodic-only, by halves.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/techchat.py                       # fresh scratch database engram_router_eval_techchat
    .venv/bin/python bench/techchat.py --conversations 4     # a development subset (the docs use all 30)
    .venv/bin/python bench/techchat.py --reuse               # written and consolidated: only ask again

Generates the set (evaluation.techchat, seeded, from the installed sources and READMEs), then runs
`manage.py memory_eval techchat` in a scratch database of its own. Writes docs/benchmarks/techchat.md.
"""

from __future__ import annotations

import argparse

from locomo import add_common, common_eval_args, run_memory_eval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(parser, db="engram_router_eval_techchat", report="techchat.md")
    parser.add_argument("--seed", type=int, default=29)
    parser.set_defaults(budgets="1000,2000,4000")
    args = parser.parse_args()
    run_memory_eval("techchat", args.db, ["--seed", str(args.seed), *common_eval_args(args)], "bench/techchat.py")


if __name__ == "__main__":
    main()

"""What bounds recall (issue 41): served grounded recall against the pool the router considered
(offered + considered, as each request's trace logs it) and the best any packer could serve from it
within the budget, per half and budget.

    set -a && . .data/engram.env && set +a
    psql postgres://postgres@127.0.0.1:54329/postgres -c "CREATE DATABASE engram_pool_locomo TEMPLATE engram_locomo_base"
    .venv/bin/python bench/pool_bound.py --db engram_pool_locomo --every 2 --report /tmp/pool_locomo.md
    .venv/bin/python bench/pool_bound.py --set techchat --db engram_pool_tech --report /tmp/pool_tech.md

Runs `manage.py pool_bound` in the given database (bench/locomo.py's machinery: migrated, the app role
granted). The tenant is memory_eval's, found by its slug (as bench/locomo.py --reuse and
bench/memory_control.py --reuse find it): it must be written already; only questions are asked, and
their traces are written. Run it on a copy of a base database, not the base itself.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DATASET, ROOT, scratch_env  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True, help="a copy of a base database (CREATE DATABASE ... TEMPLATE ...)")
    parser.add_argument("--set", default="locomo", choices=("locomo", "techchat"))
    parser.add_argument("--tenant", default="", help="default: memory_eval's slug for the set")
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--conversations", type=int, default=0)
    parser.add_argument("--every", type=int, default=1, help="only every K-th question of each conversation")
    parser.add_argument("--questions", type=int, default=0)
    parser.add_argument("--budgets", default="1000,2000,4000")
    parser.add_argument("--value-model", default="", help="'newest' or a version: the learned value serves")
    parser.add_argument("--report", default="", help="the Markdown section to write")
    parser.add_argument("--json", default="", help="the JSON result")
    args = parser.parse_args()
    env = scratch_env(args.db)
    eval_args = ["--set", args.set, "--dataset", args.dataset, "--budgets", args.budgets]
    for flag, value in (
        ("--tenant", args.tenant), ("--report", args.report), ("--json", args.json),
        ("--conversations", args.conversations), ("--every", args.every if args.every > 1 else 0),
        ("--questions", args.questions), ("--value-model", args.value_model),
    ):  # fmt: skip
        if value:
            eval_args += [flag, str(value)]
    command = "bench/pool_bound.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    subprocess.run(
        [sys.executable, "manage.py", "pool_bound", *eval_args, "--command-line", command.strip()],
        cwd=ROOT,
        env=env,
        check=True,
    )


if __name__ == "__main__":
    main()

"""Knowledge updates on a blind set (evaluation/blind/updates_v1.jsonl, updates_v2.jsonl, updates_v3.jsonl):
aggregates only (issue 42).

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/blind_updates.py            # v1, fresh scratch database engram_blind_updates
    .venv/bin/python bench/blind_updates.py --set v2
    .venv/bin/python bench/blind_updates.py --set v3

Runs `manage.py blind_updates_eval --set …` in a scratch database of its own (a fresh tenant each run; the
command checks the set's digest first). Writes docs/benchmarks/blind_updates_<set>.md and .json.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

from locomo import DOCS, ROOT, scratch_env

sys.path.insert(0, str(ROOT))
from evaluation.blind_updates import DEFAULT_SET, SETS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_blind_updates")
    parser.add_argument("--set", choices=tuple(SETS), default=DEFAULT_SET, help="Which blind set: " + ", ".join(SETS))
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--report", default="", help="Default: docs/benchmarks/blind_updates_<set>.md")
    parser.add_argument("--json", default="", help="Default: docs/benchmarks/blind_updates_<set>.json")
    parser.add_argument("--note", default="", help="What the run measures, printed in the report")
    args = parser.parse_args()
    report = args.report or str(DOCS / f"blind_updates_{args.set}.md")
    json_path = args.json or str(DOCS / f"blind_updates_{args.set}.json")
    env = scratch_env(args.db)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    )
    code = head.stdout.strip() + (" (uncommitted changes)" if dirty.stdout.strip() else "")
    command = "bench/blind_updates.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    subprocess.run(
        [
            sys.executable, "manage.py", "blind_updates_eval", "--set", args.set, "--budget", str(args.budget),
            "--report", report, "--json", json_path, "--command-line", command.strip(), "--code", code, "--note", args.note,
        ],
        cwd=ROOT, env=env, check=True,
    )  # fmt: skip


if __name__ == "__main__":
    main()

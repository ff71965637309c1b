"""Knowledge updates on the blind set (evaluation/blind/updates_v1.jsonl): aggregates only (issue 42).

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/blind_updates.py          # fresh scratch database engram_blind_updates

Runs `manage.py blind_updates_eval` in a scratch database of its own (a fresh tenant each run; the command
checks the set's digest first). Writes docs/benchmarks/blind_updates_v1.md and blind_updates_v1.json.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys

from locomo import DOCS, ROOT, scratch_env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_blind_updates")
    parser.add_argument("--budget", type=int, default=300)
    parser.add_argument("--report", default=str(DOCS / "blind_updates_v1.md"))
    parser.add_argument("--json", default=str(DOCS / "blind_updates_v1.json"))
    args = parser.parse_args()
    env = scratch_env(args.db)
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    )
    code = head.stdout.strip() + (" (uncommitted changes)" if dirty.stdout.strip() else "")
    command = "bench/blind_updates.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    subprocess.run(
        [
            sys.executable, "manage.py", "blind_updates_eval", "--budget", str(args.budget),
            "--report", args.report, "--json", args.json, "--command-line", command.strip(), "--code", code,
        ],
        cwd=ROOT, env=env, check=True,
    )  # fmt: skip


if __name__ == "__main__":
    main()

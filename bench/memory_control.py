"""The learned value against the formula on LoCoMo, judged on answers (issue 41): a simulated agent's
feedback through the API on one half, the model trained by the job users run, the other half measured
against the formula with the off-policy estimate recorded first; then the halves swapped; and the
learning curve.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/memory_control.py                    # all ten conversations: a quiet machine
    .venv/bin/python bench/memory_control.py --reuse --db engram_grounded_c1 --conversations 2
                                                                # a 2-conversation sample (one per half)
    .venv/bin/python bench/memory_control.py --set techchat --db engram_techchat_r9 --reuse
                                                                # the technical set, on the tenant
                                                                # bench/techchat.py wrote

Runs `manage.py memory_control_eval` in a scratch database of its own (bench/locomo.py's machinery: created
as the owner, migrated; the tenant written through the real write path, or reused with --reuse). The
value-model thresholds of settings.ENGRAM are lowered for the bench through their environment variables
(--min-contexts, --min-used, --min-measured, --min-trial; the values used are printed in the report), since
one half of the sample gives a few hundred contexts. Within each feedback half, the first --trial-part of
the questions train the first model; the rest are asked under its trial (--trial-share), which the job
then decides on. Writes docs/benchmarks/memory_control.md and memory_control.png
(the learning curve).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from locomo import DATASET, DOCS, ROOT, scratch_env  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="engram_router_eval")
    parser.add_argument("--set", default="locomo", choices=("locomo", "techchat"))
    parser.add_argument("--reuse", action="store_true", help="keep the written tenant: only ask again")
    parser.add_argument("--dataset", default=str(DATASET))
    parser.add_argument("--conversations", type=int, default=0)
    parser.add_argument("--every", type=int, default=1, help="only every K-th question of each conversation")
    parser.add_argument("--budgets", default="1000,2000,4000")
    parser.add_argument("--feedback-budgets", default="1000,2000,4000")
    parser.add_argument("--exploration", default="0.2")
    parser.add_argument("--curve-every", default="25")
    parser.add_argument("--curve-half", default="first")
    parser.add_argument("--no-curve", action="store_true")
    parser.add_argument("--curve-only", action="store_true", help="only the learning curve, no directions")
    parser.add_argument("--min-contexts", default="30", help="ENGRAM_VALUE_MODEL_MIN_CONTEXTS for the bench")
    parser.add_argument("--min-used", default="10", help="ENGRAM_VALUE_MODEL_MIN_USED for the bench")
    parser.add_argument("--min-measured", default="50", help="ENGRAM_VALUE_MODEL_MIN_MEASURED for the bench")
    parser.add_argument("--min-trial", default="100", help="ENGRAM_VALUE_MODEL_MIN_TRIAL for the bench")
    parser.add_argument("--trial-part", default="0.5", help="the feedback half's share asked before training")
    parser.add_argument("--trial-share", default="0.2", help="the tenant's trial_share")
    parser.add_argument("--report", default="", help="default: docs/benchmarks/memory_control[_techchat].md")
    parser.add_argument("--chart", default="", help="default: beside the report, .png")
    parser.add_argument("--json", default="", help="default: .data/<report name>.json")
    parser.add_argument("--keep-logs", default="", help="a folder for each feedback half's logged contexts")
    parser.add_argument("--keep-models", action="store_true", help="leave the last direction's models in the tenant")
    args = parser.parse_args()
    env = scratch_env(args.db)
    env |= {
        "ENGRAM_VALUE_MODEL_MIN_CONTEXTS": args.min_contexts,
        "ENGRAM_VALUE_MODEL_MIN_USED": args.min_used,
        "ENGRAM_VALUE_MODEL_MIN_MEASURED": args.min_measured,
        "ENGRAM_VALUE_MODEL_MIN_TRIAL": args.min_trial,
    }
    report = Path(
        args.report or DOCS / ("memory_control.md" if args.set == "locomo" else f"memory_control_{args.set}.md")
    )
    eval_args = [
        "--set", args.set, "--dataset", args.dataset, "--budgets", args.budgets, "--feedback-budgets", args.feedback_budgets,
        "--exploration", args.exploration, "--curve-every", args.curve_every, "--curve-half", args.curve_half,
        "--trial-part", args.trial_part, "--trial-share", args.trial_share,
        "--report", str(report), "--chart", args.chart or str(report.with_suffix(".png")),
        "--json", args.json or str(ROOT / ".data" / f"{report.stem}.json"),
    ]  # fmt: skip
    if args.reuse:
        eval_args.append("--reuse")
    if args.conversations:
        eval_args += ["--conversations", str(args.conversations)]
    if args.every > 1:
        eval_args += ["--every", str(args.every)]
    if args.no_curve:
        eval_args.append("--no-curve")
    if args.curve_only:
        eval_args.append("--curve-only")
    if args.keep_logs:
        eval_args += ["--keep-logs", args.keep_logs]
    if args.keep_models:
        eval_args.append("--keep-models")
    command = "bench/memory_control.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    subprocess.run(
        [sys.executable, "manage.py", "memory_control_eval", *eval_args, "--command-line", command.strip()],
        cwd=ROOT,
        env=env,
        check=True,
    )


if __name__ == "__main__":
    main()

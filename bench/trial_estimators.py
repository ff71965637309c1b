"""The trial's two estimators on the same logged contexts: each feedback half's logs as
`bench/memory_control.py --keep-logs DIR` kept them, re-estimated by inverse propensity alone (the trial's
estimate before issue 41's doubly robust one) and doubly robust (router.learning.trial_estimate), each with
one look's 95% bootstrap interval and the confidence sequence the job decides on, and what each would
decide: by one look's interval (the rule before the confidence sequence) and by the sequence.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/trial_estimators.py DIR [--min-trial 100] [--max-trial 2000]

The trial's contexts are those whose candidates carry both policies' chances (p_model); the order is the
logs' (oldest first), as the job reads them. --min-trial and --max-trial are the thresholds the run used
(the bench lowers VALUE_MODEL_MIN_TRIAL to 100): the sequence is tuned at the square root of their product.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402

from router.learning import Estimate, LoggedContext, trial_estimate, trial_verdict  # noqa: E402


def logged(path: Path) -> list[LoggedContext]:
    """The logged contexts of one feedback half as `--keep-logs` kept them, oldest first."""
    contexts = []
    for line in path.open():
        r = json.loads(line)
        contexts.append(
            LoggedContext(
                r["trace_id"], r["policy"], r["rows"], np.array(r["served"]), np.array(r["propensity"]),
                np.array(r["used"]), r["budget"],
            )
        )  # fmt: skip
    return contexts


def trial_contexts(path: Path) -> list[LoggedContext]:
    return [ctx for ctx in logged(path) if any("p_model" in row for row in ctx.rows)]


def row(name: str, e: Estimate) -> str:
    one_look = "serves" if e.low > 0 else "retired" if e.high < 0 else "undecided"
    return (
        f"| {name} | {e.model:.3f} vs {e.formula:.3f} | {e.difference:+.3f} [{e.low:+.3f}, {e.high:+.3f}] | "
        f"{e.high - e.low:.3f} | {one_look} | [{e.sequence_low:+.3f}, {e.sequence_high:+.3f}] | "
        f"{trial_verdict(e) or 'undecided'} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logs", type=Path)
    parser.add_argument("--min-trial", type=int, default=100)
    parser.add_argument("--max-trial", type=int, default=2000)
    args = parser.parse_args()
    tuned_at = math.sqrt(args.min_trial * args.max_trial)
    for path in sorted(args.logs.glob("*.jsonl")):
        contexts = trial_contexts(path)
        print(f"\n{path.stem}: {len(contexts)} trial contexts")
        if len(contexts) < 2:
            continue
        print(
            "\n| estimator | used per context, model vs formula | difference [95%, one look] | width | one look "
            "decides | confidence sequence | sequence decides |\n|---|---|---|---:|---|---|---|"
        )
        print(row("inverse propensity", trial_estimate(contexts=contexts, robust=False, tuned_at=tuned_at)))
        print(row("doubly robust", trial_estimate(contexts=contexts, tuned_at=tuned_at)))


if __name__ == "__main__":
    main()

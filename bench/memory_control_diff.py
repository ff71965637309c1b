"""Two bench/memory_control.py runs on the same questions compared question by question: per direction
and budget, the learned value of run A against that of run B (grounded and plain recall_all, answer
containment, used items), with the paired 95% bootstrap interval, and whether the formula's own answers
were the same in both (a change meant for the model alone must leave them alone).

    .venv/bin/python bench/memory_control_diff.py after.json before.json --label-a beside --label-b main

The JSON files are those memory_control.py --json writes (per-question outcomes kept since this script).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import django_ready  # noqa: E402

django_ready()  # evaluation.memory_control reads the value models' job
from evaluation.memory_control import paired_arrays  # noqa: E402

METRICS = (("grounded", 0), ("plain", 1), ("contained", 2), ("used", 3))


def _pairs(a: list[list], b: list[list], column: int) -> tuple[np.ndarray, np.ndarray]:
    kept = [
        (x[column], y[column]) for x, y in zip(a, b, strict=True) if x[column] is not None and y[column] is not None
    ]
    return np.array([float(x) for x, _ in kept]), np.array([float(y) for _, y in kept])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--label-a", default="A")
    parser.add_argument("--label-b", default="B")
    args = parser.parse_args()
    a, b = (json.loads(Path(p).read_text()) for p in (args.a, args.b))
    print(f"| direction | budget | metric | formula same | model {args.label_a} | model {args.label_b} | Δ [95%] |")
    print("|---|---:|---|---|---:|---:|---|")
    for run_a, run_b in zip(a["runs"], b["runs"], strict=True):
        direction = f"{run_a['trained_on']} → {run_a['measured_on']}"
        budgets = sorted({int(k.split("@")[1]) for k in run_a["outcomes"]})
        for budget in budgets:
            same = run_a["outcomes"][f"formula@{budget}"] == run_b["outcomes"][f"formula@{budget}"]
            for name, column in METRICS:
                m_a, m_b = _pairs(run_a["outcomes"][f"model@{budget}"], run_b["outcomes"][f"model@{budget}"], column)
                if not len(m_a):
                    continue  # not scored on this set (the technical set has no answer containment)
                p = paired_arrays(m_a, m_b)
                print(
                    f"| {direction} | {budget} | {name} | {'yes' if same else 'NO'} | {p.model:.3f} | {p.formula:.3f} "
                    f"| {p.difference:+.3f} [{p.low:+.3f}, {p.high:+.3f}] |"
                )


if __name__ == "__main__":
    main()

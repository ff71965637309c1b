"""Two memory_eval runs compared question by question: per budget and half, each metric's means and the
95% bootstrap interval of their paired difference (evaluation.memory_control.paired_arrays).

A run's JSON (`manage.py memory_eval ... --json`) lists each scoreable question's score per method and
budget (`scored`, evaluation.recall.evaluate). The two sides may be two methods of one run (all layers
against episodic only) or one method of two runs (a packer part on and off, router.parts). The ablation
gate reads the interval: side A holds when it is at least side B less the interval, that is when the
interval's upper end is not below 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evaluation.memory_control import Paired, paired_arrays
from evaluation.recall import HALVES

METRICS = (("grounded recall_all", "grounded"), ("plain recall_all", "plain"), ("answer containment", "contained"))


@dataclass(frozen=True)
class Comparison:
    budget: int
    half: str
    metric: str
    paired: Paired

    @property
    def holds(self) -> bool:
        """A is at least B less the paired 95% interval of the difference."""
        return self.paired.high >= 0.0


def _scores(result: Mapping[str, Any], method: str) -> dict[tuple[int, str], Mapping[str, Any]]:
    if "scored" not in result:
        raise ValueError("the run's JSON has no per-question scores (`scored`): run memory_eval again")
    return {(int(r["budget"]), str(r["question"])): r for r in result["scored"] if r["method"] == method}


def compare(
    a: Mapping[str, Any], b: Mapping[str, Any], *, method_a: str = "engram", method_b: str = "engram", seed: int = 0
) -> list[Comparison]:
    """Side A (`method_a` of run `a`) against side B, on the questions and budgets both scored; the two
    must have scored the same questions at each budget they share."""
    scores_a, scores_b = _scores(a, method_a), _scores(b, method_b)
    budgets = sorted({k[0] for k in scores_a} & {k[0] for k in scores_b})
    if not budgets:
        raise ValueError(f"no budget scored by both {method_a!r} and {method_b!r}")
    out: list[Comparison] = []
    for budget in budgets:
        keys_a = {k for k in scores_a if k[0] == budget}
        keys_b = {k for k in scores_b if k[0] == budget}
        if keys_a != keys_b:
            raise ValueError(f"at {budget} tokens the runs scored different questions ({len(keys_a ^ keys_b)} apart)")
        keys = sorted(keys_a)
        for half in HALVES:
            in_half = [k for k in keys if half == "all" or scores_a[k]["half"] == half]
            for label, field in METRICS:
                pairs = [
                    (scores_a[k][field], scores_b[k][field])
                    for k in in_half
                    if scores_a[k][field] is not None and scores_b[k][field] is not None
                ]
                if not pairs:
                    continue
                m = np.array([float(p[0]) for p in pairs])
                f = np.array([float(p[1]) for p in pairs])
                out.append(Comparison(budget, half, label, paired_arrays(m, f, seed=seed)))
    return out


def markdown(rows: Sequence[Comparison], *, label_a: str, label_b: str, halves: Mapping[str, str]) -> str:
    """One table: per budget, half and metric, both means, the difference and its interval, the gate."""
    lines = [
        f"| budget | half | metric | {label_a} | {label_b} | difference | 95% interval | holds |",
        "|---:|---|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        p = r.paired
        lines.append(
            f"| {r.budget} | {halves.get(r.half, r.half)} | {r.metric} | {p.model:.3f} | {p.formula:.3f} | "
            f"{p.difference:+.3f} | [{p.low:+.3f}, {p.high:+.3f}] | {'yes' if r.holds else 'NO'} |"
        )
    return "\n".join(lines) + "\n"

"""Fit the router's one relevance scale: the probability that a candidate is evidence for the question,
per kind of candidate, as a logistic model over the score parts it already carries.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/relevance_fit.py --tenant T --half first --every 4          # fit, print constants
    .venv/bin/python bench/relevance_fit.py --tenant T --half second --every 4 --check  # check the constants

T is a tenant holding LoCoMo through the real write path (imported, every session ended, consolidation
finished). For each question of the half, the policy's offer (router.policy.HeuristicPolicy, in
process, the budget of `--budget`) gives the candidates; a candidate is labelled evidence when a source
it cites is one of the question's evidence turns, as the evaluation credits it. The fit (Newton's
method, a small L2 penalty) prints the constants of router.candidates.common.HeuristicWeights;
`--check` scores the constants in the code on other questions: log loss against a constant model, and
calibration by decile of predicted probability.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
DATASET = ROOT.parent / "shared" / "datasets" / "locomo" / "locomo10.json"

Row = tuple[list[float], int]


def features(item, w) -> tuple[str, list[float]] | None:  # type: ignore[no-untyped-def]
    from router.candidates.common import fact_features, passage_features, summary_features

    parts = item.score_parts
    if item.type == "fact" and "vector" in parts:
        return "fact", fact_features(parts)
    if item.type == "session_summary":
        return "summary", summary_features(parts)
    if item.type == "episode" and "fused" in parts:
        return "passage", passage_features(parts)
    return None


def collect(tenant_slug: str, half: str, every: int, budget: int) -> dict[str, list[Row]]:
    import django

    django.setup()
    from evaluation.recall import half_of, load_locomo
    from router.budgets import budget_plan
    from router.policy import HeuristicPolicy
    from router.types import ContextRequest
    from tenants.models import Tenant
    from tenants.scope import tenant_scope

    tenant = Tenant.objects.get(slug=tenant_slug)
    policy = HeuristicPolicy()
    conversations = load_locomo(DATASET)
    rows: dict[str, list[Row]] = {"passage": [], "fact": [], "summary": []}
    for index, conv in enumerate(conversations):
        if half_of(index, len(conversations)) != half:
            continue
        for q in [q for q in conv.questions if "overall" in q.groups][::every]:
            evidence = {e.external_id for e in q.evidence}
            request = ContextRequest(
                subject=q.sample_id, query=q.text, max_tokens=budget, budgets={"reserve": 0, "episodic": budget}
            )
            plan = budget_plan(
                config=tenant.config, max_tokens=budget, overrides=request.budgets, layers=request.layers
            )
            with tenant_scope(tenant):
                offered = policy.offer(tenant=tenant, request=request, plan=plan)
            for item in [*offered.semantic, *offered.episodic]:
                kind = features(item, policy.w)
                if kind is None:
                    continue
                label = int(any(s.external_id in evidence for s in item.sources))
                rows[kind[0]].append((kind[1], label))
        print(f"{conv.sample_id}: {sum(len(r) for r in rows.values())} candidates", file=sys.stderr)
    return rows


def fit(rows: Sequence[Row], l2: float = 1e-3) -> list[float]:
    x = np.array([[1.0, *f] for f, _ in rows])
    y = np.array([label for _, label in rows], dtype=float)
    beta = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-x @ beta))
        grad = x.T @ (p - y) + l2 * beta
        hess = (x.T * (p * (1 - p))) @ x + l2 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        beta -= step
        if np.abs(step).max() < 1e-8:
            break
    return [round(float(b), 4) for b in beta]


def log_loss(rows: Sequence[Row], predict: Callable[[list[float]], float]) -> float:
    eps = 1e-9
    return -sum(
        math.log(max(eps, p)) if y else math.log(max(eps, 1 - p)) for p, y in ((predict(f), y) for f, y in rows)
    ) / max(len(rows), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenant", required=True)
    parser.add_argument("--half", choices=("first", "second"), default="first")
    parser.add_argument("--every", type=int, default=4)
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    rows = collect(args.tenant, args.half, args.every, args.budget)
    from router.candidates.common import HeuristicWeights, logistic

    w = HeuristicWeights()
    coefficients = {"passage": w.passage_logit, "fact": w.fact_logit, "summary": w.summary_logit}
    for kind, data in rows.items():
        positives = sum(y for _, y in data)
        print(f"{kind}: {len(data)} candidates, {positives} evidence")
        if not data or not positives:
            continue
        beta = list(coefficients[kind]) if args.check else fit(data)
        base = positives / len(data)
        print(
            f"  {kind}_logit = {tuple(beta)}  log loss {log_loss(data, lambda f, b=beta: logistic(b, f)):.4f}"
            f" (constant {log_loss(data, lambda f, c=base: c):.4f})"
        )
        predicted = sorted(((logistic(beta, f), y) for f, y in data), key=lambda t: t[0])
        for decile in range(10):
            chunk = predicted[decile * len(predicted) // 10 : (decile + 1) * len(predicted) // 10]
            if chunk:
                mean_p = sum(p for p, _ in chunk) / len(chunk)
                rate = sum(y for _, y in chunk) / len(chunk)
                print(f"    decile {decile}: predicted {mean_p:.3f} observed {rate:.3f} (n={len(chunk)})")


if __name__ == "__main__":
    main()

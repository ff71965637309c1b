"""The training job's off-policy estimate (router.learning.off_policy_estimate) recomputed on kept logs under
other rewards and estimators, against the difference a memory-control run measured on the other half.

    set -a && . .data/engram.env && set +a
    .venv/bin/python bench/ope_rewards.py RUN.json LOGS_DIR [RUN.json LOGS_DIR ...] [--budget 1000]

RUN.json and LOGS_DIR come from one `bench/memory_control.py ... --json RUN.json --keep-logs LOGS_DIR` run:
for each feedback half, the model is refitted as the job fits it (router.learning.fit on the oldest 70% of
the half's logged contexts) and estimated on the newest 30%, as the job does; the measured difference is
the run's paired grounded recall_all (and used items per context) at --budget on the other half.

Rewards, per context, of the items a policy's replay chooses among those the logs served:
- items: the used items (what the job estimates);
- turns: the distinct source turns of the used items (a fact and the line it restates count once);
- hit: 1 when any chosen item is used.
Each by inverse propensity (a chosen item the logs never served counts 0) and doubly robust (such an
item counts its expected use, router.learning.expected_use fitted on the training part). Rows "@B" keep
the held-out contexts of budget B alone (the measured difference is at one budget).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

import django  # noqa: E402

django.setup()

import numpy as np  # noqa: E402
from trial_estimators import logged  # noqa: E402

from router.learning import (  # noqa: E402
    HOLDOUT,
    LoggedContext,
    _paired,
    _tokens,
    expected_use,
    fit,
    ips_used,
    loaded,
    replayed,
    robust_estimate,
)

Reward = Callable[[np.ndarray, LoggedContext, "np.ndarray | None"], float]


def _turns(row: dict) -> frozenset:
    return frozenset(s.get("episode_id") or s.get("external_id") for s in row.get("sources") or ())


def turns(chosen: np.ndarray, ctx: LoggedContext, q: np.ndarray | None) -> float:
    """Distinct source turns of the chosen used items, each weighted by the inverse of the largest chance
    among the chosen used items holding it; doubly robust adds the expected use of the chosen items the
    logs never served (their sources are not logged: each counts as a turn of its own)."""
    weight: dict = {}
    for i in np.flatnonzero(chosen & ctx.served & (ctx.propensity > 0) & ctx.used):
        for t in _turns(ctx.rows[i]) or {("item", i)}:
            weight[t] = max(weight.get(t, 0.0), float(ctx.propensity[i]))
    ips = float(sum(1.0 / p for p in weight.values()))
    if q is None:
        return ips
    return ips + float(np.sum(q[chosen & ~(ctx.served & (ctx.propensity > 0))]))


def hit(chosen: np.ndarray, ctx: LoggedContext, q: np.ndarray | None) -> float:
    seen = chosen & ctx.served & (ctx.propensity > 0) & ctx.used
    if seen.any():
        return 1.0 / float(ctx.propensity[seen].max())
    if q is None:
        return 0.0
    miss = q[chosen & ~(ctx.served & (ctx.propensity > 0))]
    return float(1.0 - np.prod(1.0 - miss))


def support(chosen: np.ndarray, ctx: LoggedContext) -> float:
    """The share of the chosen tokens on items the logs never served."""
    cost = _tokens(ctx) + 1.0
    return float(cost[chosen & ~ctx.served].sum() / max(cost[chosen].sum(), 1.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("pairs", nargs="+")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--only-resampled", action="store_true", help="only the doubly robust rows the switch reads")
    args = parser.parse_args()
    rewards: dict[str, Reward] = {"items": ips_used, "turns": turns, "hit": hit}
    print(
        "| run | feedback half | reward | estimator | contexts | model vs formula | difference [95%] | measured Δ "
        "grounded @1K | sign |\n|---|---|---|---|---:|---|---|---|---|"
    )
    for run_path, logs in zip(args.pairs[::2], args.pairs[1::2], strict=True):
        run = json.loads(Path(run_path).read_text())
        for half in run["runs"]:
            contexts = logged(Path(logs) / f"{half['trained_on']}.jsonl")
            cut = len(contexts) - max(1, math.ceil(HOLDOUT * len(contexts)))
            train, held = contexts[:cut], contexts[cut:]
            fitted = fit(train)
            assert fitted is not None
            model = loaded(fitted, "model")
            q_fit = expected_use(train)
            measured = half["comparison"][str(args.budget)]["grounded"]
            for scope in ("all", f"@{args.budget}"):
                scoped = held if scope == "all" else [c for c in held if c.budget <= args.budget]
                chosen = [replayed(model, ctx) for ctx in scoped]
                unsupported = np.mean([support(m, c) for (m, _), c in zip(chosen, scoped, strict=True)])
                for name, reward in ({} if args.only_resampled else rewards).items():
                    for estimator in ("ips", "dr"):
                        qs = [q_fit(c) if estimator == "dr" and q_fit else None for c in scoped]
                        m = np.array([reward(a, c, q) for (a, _), c, q in zip(chosen, scoped, qs, strict=True)])
                        f = np.array([reward(b, c, q) for (_, b), c, q in zip(chosen, scoped, qs, strict=True)])
                        e = _paired(m, f, seed=0)
                        sign = "right" if np.sign(e.difference) == np.sign(measured["difference"]) else "wrong"
                        print(
                            f"| {Path(run_path).stem} | {half['trained_on']} | {name} | {estimator} {scope} | "
                            f"{e.contexts} | {e.model:.3f} vs {e.formula:.3f} | {e.difference:+.3f} [{e.low:+.3f}, "
                            f"{e.high:+.3f}] | {measured['difference']:+.3f} [{measured['low']:+.3f}, "
                            f"{measured['high']:+.3f}] | {sign} |"
                        )
                robust = robust_estimate(model=model, contexts=scoped, fitted_on=train)
                if robust is not None:
                    e = robust
                    sign = "right" if np.sign(e.difference) == np.sign(measured["difference"]) else "wrong"
                    print(
                        f"| {Path(run_path).stem} | {half['trained_on']} | items | dr, direct part resampled "
                        f"{scope} | {e.contexts} | {e.model:.3f} vs {e.formula:.3f} | {e.difference:+.3f} "
                        f"[{e.low:+.3f}, {e.high:+.3f}] | {measured['difference']:+.3f} [{measured['low']:+.3f}, "
                        f"{measured['high']:+.3f}] | {sign} |"
                    )
                print(f"<!-- {half['trained_on']} {scope}: model's chosen tokens never served {unsupported:.3f} -->")


if __name__ == "__main__":
    main()

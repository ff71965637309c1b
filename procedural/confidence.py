"""How much to trust a procedure, from its outcomes: Wilson score intervals on the success rate.

- Confidence (what the router ranks by) is the LOWER bound of the interval, computed on the
  version's outcomes plus a Beta prior expressed as pseudo-outcomes (PRIORS). An operator's
  instruction starts as if it had 3 successes and 1 failure: believed to work, worth four
  observations, so real outcomes overrule it within a handful of applications. A rule discovered from
  experience starts at 2 and 1 (weaker: mined correlation, not a statement), a fine-tuning import at
  1 and 1 (no opinion). With Z = 1.645 a new instruction rule has confidence 0.36.
- Deprecation is a verdict on the evidence alone, without the prior: once a version has at least
  `procedure_min_applications` applications with a known result (since it was last (re)activated),
  and the UPPER bound of its observed success rate is below `procedure_deprecate_below`, it is
  deprecated automatically. With the defaults (10 and 0.4) that means at most 1 success in 10.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

# One-sided 95%: each bound alone holds with 95% confidence.
Z = 1.645
PRIORS: dict[str, tuple[float, float]] = {
    "instruction": (3.0, 1.0),
    "experience": (2.0, 1.0),
    "fine_tuning": (1.0, 1.0),
}


def wilson_interval(successes: float, trials: float, *, z: float = Z) -> tuple[float, float]:
    """The Wilson score interval of a success rate; (0, 1) when there are no trials."""
    if trials <= 0:
        return 0.0, 1.0
    p = min(max(successes / trials, 0.0), 1.0)
    z2 = z * z
    denominator = 1.0 + z2 / trials
    centre = (p + z2 / (2.0 * trials)) / denominator
    margin = z * math.sqrt(p * (1.0 - p) / trials + z2 / (4.0 * trials * trials)) / denominator
    return max(0.0, centre - margin), min(1.0, centre + margin)


def confidence_for(*, source: str, successes: int, failures: int) -> float:
    alpha, beta = PRIORS.get(source, PRIORS["fine_tuning"])
    low, _ = wilson_interval(successes + alpha, successes + failures + alpha + beta)
    return round(low, 6)


@dataclass(frozen=True)
class DeprecationVerdict:
    due: bool
    applications: int
    successes: int
    failures: int
    success_rate: float | None
    lower: float
    upper: float
    min_applications: int
    threshold: float

    def figures(self) -> dict[str, Any]:
        return asdict(self)


def deprecation_verdict(
    *, successes: int, failures: int, min_applications: int, threshold: float
) -> DeprecationVerdict:
    trials = successes + failures
    lower, upper = wilson_interval(successes, trials)
    return DeprecationVerdict(
        due=trials >= min_applications and upper < threshold,
        applications=trials,
        successes=successes,
        failures=failures,
        success_rate=round(successes / trials, 6) if trials else None,
        lower=round(lower, 6),
        upper=round(upper, 6),
        min_applications=min_applications,
        threshold=threshold,
    )

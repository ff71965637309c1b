"""A bounded trial of a value model: interleaved with the formula on the requests, logged, so that the
logs give every item either policy would serve a known chance of being served.

A model whose off-policy estimate on the formula's logs is not shown worse than the formula
(router.learning) goes on trial. Each request then draws, seeded by the request like exploration's
draw, whether the model's context is served (with the tenant's `trial_share`, at most MAX_SHARE) or
the formula's. Both are packed from the same candidates (the model only revalues them), and margin
exploration applies to each, so each candidate's chance of being served under each policy is exact:
`by_formula` and `by_model`. What the trace logs as the candidate's chance is the mixture,
(1 - share) * by_formula + share * by_model, and each chance apart, so that the trial's estimate
(router.learning.trial_estimate) weighs each served item by what each policy would have done with it,
with no replay.

"The formula" here is what serves without the trial: the formula's value, or the tenant's serving
model's when one serves (the trial then compares the candidate with it).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from datetime import datetime

from router.exploration import Explored, explore
from router.packing import assemble
from router.parts import PackerParts
from router.types import BudgetPlan, LayerCandidates
from router.value import LoadedModel, pool_of, revalue

MAX_SHARE = 0.5
MODEL, FORMULA = "model", "formula"


@dataclasses.dataclass(frozen=True)
class Trialled:
    # The context served, each candidate's chance (the mixture) by id.
    explored: Explored
    arm: str
    share: float
    # Each candidate's chance of being served by the formula's policy and by the model's, by id.
    by_formula: dict[str, float]
    by_model: dict[str, float]


def trial_share(share: float) -> float:
    return min(max(share, 0.0), MAX_SHARE)


def draws_model(*, request_key: str, share: float) -> bool:
    """Whether this request is served the model's context: seeded by the request alone, so the same
    request draws the same arm."""
    digest = hashlib.sha256(json.dumps(["trial", request_key]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big")).random() < share


def trial_build(
    *,
    offered: LayerCandidates,
    plan: BudgetPlan,
    fmt: str,
    parts: PackerParts,
    model: LoadedModel,
    share: float,
    chance: float,
    request_key: str,
    now: datetime,
) -> Trialled:
    """Both contexts from the same candidates, each with margin exploration, and the one the draw serves."""
    share = trial_share(share)
    by_formula = explore(
        built=assemble(offered=offered, plan=plan, fmt=fmt, parts=parts),
        chance=chance,
        request_key=request_key,
        fmt=fmt,
    )
    pool = pool_of(offered)
    before = [item.value for item in pool]
    revalue(model=model, pool=pool, now=now)
    by_model = explore(
        built=assemble(offered=offered, plan=plan, fmt=fmt, parts=parts),
        chance=chance,
        request_key=request_key,
        fmt=fmt,
    )
    arm = MODEL if draws_model(request_key=request_key, share=share) else FORMULA
    if arm == FORMULA:
        for item, value in zip(pool, before, strict=True):
            item.value = value
    ids = set(by_formula.propensity) | set(by_model.propensity)
    f = {i: by_formula.propensity.get(i, 0.0) for i in ids}
    m = {i: by_model.propensity.get(i, 0.0) for i in ids}
    mixture = {i: (1.0 - share) * f[i] + share * m[i] for i in ids}
    served = by_model if arm == MODEL else by_formula
    return Trialled(dataclasses.replace(served, propensity=mixture), arm, share, f, m)

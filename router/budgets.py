"""Token budgets of a context request: the tenant's defaults, overridden per request.

`max_tokens` is the caller's whole window. A reserve (by default half of it) is kept for the
conversation and the answer; the layers share the rest (`memory`). Each layer has a budget; they are
filled in priority order procedural, semantic, working, episodic (rendered procedural, semantic,
episodic, working). Whatever the procedural, semantic and working layers leave unused rolls over to
the episodic layer; what the episodic layer leaves unused stays with the caller, so the prompt is
shorter than `memory`, never longer.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.errors import ValidationProblem
from router.types import LAYERS, BudgetPlan, Layer
from tenants.models import TenantSettings

MIN_MAX_TOKENS = 100
MAX_MAX_TOKENS = 200_000
BUDGET_KEYS = (*LAYERS, "reserve")


def budget_plan(
    *, config: TenantSettings, max_tokens: int, overrides: Mapping[str, int], layers: tuple[Layer, ...]
) -> BudgetPlan:
    if not MIN_MAX_TOKENS <= max_tokens <= MAX_MAX_TOKENS:
        raise ValidationProblem.at("/max_tokens", f"max_tokens must be between {MIN_MAX_TOKENS} and {MAX_MAX_TOKENS}.")
    for key, value in overrides.items():
        if key not in BUDGET_KEYS:
            raise ValidationProblem.at(f"/budgets/{key}", f"Unknown budget; use one of {', '.join(BUDGET_KEYS)}.")
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValidationProblem.at(f"/budgets/{key}", "A budget is a whole number of tokens, 0 or more.")
    reserve = overrides.get("reserve", round(max_tokens * config.conversation_reserve_fraction))
    if reserve > max_tokens - MIN_MAX_TOKENS // 2:
        raise ValidationProblem.at(
            "/budgets/reserve", f"The reserve leaves fewer than {MIN_MAX_TOKENS // 2} tokens for memory."
        )
    defaults: dict[Layer, int] = {
        "procedural": config.budget_procedural,
        "semantic": config.budget_semantic,
        "episodic": min(round(max_tokens * config.episodic_fraction), config.episodic_cap),
        "working": config.budget_working,
    }
    per_layer = {layer: (overrides.get(layer, defaults[layer]) if layer in layers else 0) for layer in LAYERS}
    return BudgetPlan(
        max_tokens=max_tokens,
        reserve=reserve,
        memory=max_tokens - reserve,
        procedural=per_layer["procedural"],
        semantic=per_layer["semantic"],
        episodic=per_layer["episodic"],
        working=per_layer["working"],
    )

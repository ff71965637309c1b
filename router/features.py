"""What a learned value reads of a candidate: one row of numbers per candidate.

The same columns are built two ways, and a test holds them equal: from the candidates of a request
(`candidate_matrix`, column by column over the pool) and from the items a trace logged
(`logged_matrix`, at training time). A column is either one of FIXED or a score part (`part:<name>`).
Which score parts a model reads is chosen from the logs when it is trained (router.learning): parts
that carry ids rather than measurements (a passage id, the episode an update replaces) never qualify.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from router.types import Candidate

LAYERS = ("procedural", "semantic", "episodic")
TYPES = ("fact", "episode", "summary", "procedure")
FIXED: tuple[str, ...] = (
    "formula_value",
    "log_formula_value",
    "score",
    "log_tokens",
    "log_age_days",
    "filler",
    "requires",
    "covers",
    *(f"layer:{name}" for name in LAYERS),
    *(f"type:{name}" for name in TYPES),
)
PART_PREFIX = "part:"
FORMULA_PART = "formula_value"


def age_days(occurred_at: datetime | None, now: datetime) -> float:
    if occurred_at is None:
        return 0.0
    return max(0.0, (now - occurred_at).total_seconds() / 86_400)


def logged_fields(item: Candidate, *, now: datetime) -> dict[str, Any]:
    """What a trace keeps of a candidate beyond its id, tokens, value, score and score parts, so that
    its row can be rebuilt later."""
    return {
        "layer": item.layer,
        "age_days": round(age_days(item.occurred_at, now), 4),
        "filler": item.filler,
        "requires": bool(item.requires),
        "covers": bool(item.covers),
    }


def _fixed_columns(
    value: np.ndarray,
    score: np.ndarray,
    tokens: np.ndarray,
    age: np.ndarray,
    flags: Mapping[str, np.ndarray],
    layer: Sequence[str],
    kind: Sequence[str],
) -> dict[str, np.ndarray]:
    value = np.maximum(value, 0.0)
    columns = {
        "formula_value": value,
        "log_formula_value": np.log(value + 1e-6),
        "score": score,
        "log_tokens": np.log1p(np.maximum(tokens, 0.0)),
        "log_age_days": np.log1p(np.maximum(age, 0.0)),
        **flags,
    }
    layers = np.asarray(layer, dtype=object)
    kinds = np.asarray(kind, dtype=object)
    for name in LAYERS:
        columns[f"layer:{name}"] = (layers == name).astype(np.float64)
    for name in TYPES:
        columns[f"type:{name}"] = (kinds == name).astype(np.float64)
    return columns


def _assemble(
    n: int, names: Sequence[str], fixed: Mapping[str, np.ndarray], part: Callable[[str], np.ndarray]
) -> np.ndarray:
    out = np.zeros((n, len(names)), dtype=np.float64)
    if n == 0:
        return out
    for j, name in enumerate(names):
        out[:, j] = part(name[len(PART_PREFIX) :]) if name.startswith(PART_PREFIX) else fixed[name]
    return out


def candidate_matrix(
    items: Sequence[Candidate], names: Sequence[str], *, tokens: Sequence[int], now: datetime
) -> np.ndarray:
    """The pool's rows for the columns `names`, one column at a time."""
    n = len(items)

    def floats(values: Any) -> np.ndarray:
        return np.fromiter(values, dtype=np.float64, count=n)

    fixed = _fixed_columns(
        floats(c.value for c in items),
        floats(c.score for c in items),
        np.asarray(tokens, dtype=np.float64),
        floats(age_days(c.occurred_at, now) for c in items),
        {
            "filler": floats(c.filler for c in items),
            "requires": floats(bool(c.requires) for c in items),
            "covers": floats(bool(c.covers) for c in items),
        },
        [c.layer for c in items],
        [c.type for c in items],
    )
    return _assemble(n, names, fixed, lambda part: floats(c.score_parts.get(part, 0.0) for c in items))


def logged_matrix(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> np.ndarray:
    """The rows of items as a trace logged them (router.services.item_dict and considered_dict)."""
    n = len(rows)

    def floats(key: str) -> np.ndarray:
        return np.fromiter((float(r.get(key) or 0.0) for r in rows), dtype=np.float64, count=n)

    # Where a learned value served, the formula's value is kept among the score parts (router.value).
    formula = np.fromiter(
        (float((r.get("score_parts") or {}).get(FORMULA_PART, r.get("value") or 0.0)) for r in rows),
        dtype=np.float64,
        count=n,
    )
    fixed = _fixed_columns(
        formula,
        floats("score"),
        floats("tokens"),
        floats("age_days"),
        {"filler": floats("filler"), "requires": floats("requires"), "covers": floats("covers")},
        [str(r.get("layer", "")) for r in rows],
        [str(r.get("type", "")) for r in rows],
    )

    def part(name: str) -> np.ndarray:
        return np.fromiter((float(r.get("score_parts", {}).get(name, 0.0)) for r in rows), dtype=np.float64, count=n)

    return _assemble(n, names, fixed, part)


def measured_parts(rows: Sequence[Mapping[str, Any]], *, bound: float = 100.0, min_share: float = 0.01) -> list[str]:
    """The score parts worth a column: present in at least `min_share` of the rows and always within
    +-`bound` (ids are larger), sorted by name."""
    seen: dict[str, int] = {}
    too_large: set[str] = set()
    for row in rows:
        for name, value in (row.get("score_parts") or {}).items():
            if name == FORMULA_PART:
                continue
            seen[name] = seen.get(name, 0) + 1
            if not math.isfinite(float(value)) or abs(float(value)) > bound:
                too_large.add(name)
    floor = max(1, math.ceil(min_share * len(rows)))
    return sorted(name for name, count in seen.items() if count >= floor and name not in too_large)


def feature_names(parts: Sequence[str]) -> list[str]:
    return [*FIXED, *(f"{PART_PREFIX}{name}" for name in parts)]

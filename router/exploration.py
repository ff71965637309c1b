"""Bounded exploration at the budget's margin, so that the logs say what an item the ranking nearly
served would have been worth.

With the tenant's chance `exploration` (TenantSettings, 0 by default), the chosen item worth least per
token (the margin) gives its place to one of the next `window` items the packing left out, drawn
uniformly among those whose swap still fits every budget exactly. Every item's chance of being served
is known and logged with the trace: 1 for the items above the margin, 1 - chance for the margin item
when some alternative fits, chance / |fitting| for each alternative that fits, 0 for the rest.

What may be swapped in is only what the packing itself could have taken: a candidate of a ranked
layer (never the working notes, never a filler), that requires nothing, covers nothing chosen and is
covered by nothing chosen. Rules that exclude an item (erased, superseded, another subject's) act
before a candidate exists, so exploration can never serve such an item. The draw is seeded by the
request and the pool, so the same stored state and request give the same context.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from collections.abc import Sequence

from core.tokens import count_tokens
from router.packing import RANKED_LAYERS
from router.pricing import line_tokens
from router.rendering import render_layer, render_prompt
from router.types import LAYERS, BuiltContext, Candidate, Layer

MAX_CHANCE = 0.2
WINDOW = 3


@dataclasses.dataclass(frozen=True)
class Explored:
    built: BuiltContext
    # Each candidate's chance of being served, by id (absent: 0).
    propensity: dict[str, float]
    swapped: tuple[str, str] | None = None


def _density(item: Candidate) -> float:
    return item.value / (line_tokens(item) + 1)


def _prompt(texts: dict[Layer, str]) -> str:
    return render_prompt(texts[layer] for layer in LAYERS)


def _fits(built: BuiltContext, texts: dict[Layer, str], swap: tuple[Candidate, Candidate], fmt: str) -> bool:
    out, into = swap
    layers = {out.layer, into.layer}
    trial = dict(texts)
    for layer in layers:
        items = [c for c in built.chosen[layer] if c.id != out.id] + ([into] if into.layer == layer else [])
        trial[layer] = render_layer(layer, items, fmt)
        if count_tokens(trial[layer]) > built.granted.get(layer, 0):
            return False
    return count_tokens(_prompt(trial)) <= built.budgets.memory


def _seed(request_key: str, margin: Candidate, alternatives: Sequence[Candidate]) -> int:
    digest = hashlib.sha256(
        json.dumps([request_key, margin.id, [a.id for a in alternatives]], sort_keys=True).encode()
    ).digest()
    return int.from_bytes(digest[:8], "big")


def explore(*, built: BuiltContext, chance: float, request_key: str, fmt: str) -> Explored:
    """The context with at most one swap at its margin, and every candidate's chance of being served."""
    chosen = [c for layer in LAYERS for c in built.chosen[layer]]
    propensity = {c.id: 1.0 for c in chosen}
    chance = min(max(chance, 0.0), MAX_CHANCE)
    ranked = [c for layer in RANKED_LAYERS for c in built.chosen[layer]]
    if chance <= 0.0 or not ranked:
        return Explored(built, propensity)
    chosen_ids = {c.id for c in chosen}
    covered = set().union(*(c.covers for c in chosen))
    required = set().union(*(c.requires for c in chosen))
    margins = [c for c in ranked if c.id not in required and not c.filler]
    if not margins:
        return Explored(built, propensity)
    margin = max(margins, key=lambda c: (-_density(c), -c.value, *c.tie()))
    pool = sorted(
        (
            c
            for c in built.considered
            if c.layer in RANKED_LAYERS
            and not c.filler
            and not c.requires
            and c.id not in covered
            and not (c.covers & chosen_ids)
        ),
        key=lambda c: (-_density(c), -c.value, *c.tie()),
    )[:WINDOW]
    texts: dict[Layer, str] = {layer: render_layer(layer, built.chosen[layer], fmt) for layer in LAYERS}
    fitting = [c for c in pool if _fits(built, texts, (margin, c), fmt)]
    if not fitting:
        return Explored(built, propensity)
    propensity[margin.id] = 1.0 - chance
    for c in fitting:
        propensity[c.id] = chance / len(fitting)
    rng = random.Random(_seed(request_key, margin, fitting))
    if rng.random() >= chance:
        return Explored(built, propensity)
    into = fitting[rng.randrange(len(fitting))]
    new_chosen = {layer: list(items) for layer, items in built.chosen.items()}
    new_chosen[margin.layer] = [c for c in new_chosen[margin.layer] if c.id != margin.id]
    new_chosen[into.layer].append(into)
    for layer in {margin.layer, into.layer}:
        texts[layer] = render_layer(layer, new_chosen[layer], fmt)
    tokens: dict[str, int] = {layer: count_tokens(texts[layer]) for layer in LAYERS}
    prompt = _prompt(texts)
    tokens["total"] = count_tokens(prompt)
    considered = [c for c in built.considered if c.id != into.id] + [margin]
    swapped = dataclasses.replace(built, prompt=prompt, tokens=tokens, chosen=new_chosen, considered=considered)
    return Explored(swapped, propensity, (margin.id, into.id))

"""Packing: within each layer's budget, take the items worth most per token; then count exactly.

Costs used for choosing are the token counts of each rendered line plus its newline, and of the
section and group headers an item opens. BPE counts are not exactly additive across joins (a line that
ends in punctuation takes the newline after it into its last token), so after choosing, each layer and
then the whole prompt are counted exactly, from the lines' counts and what each join costs
(router.pricing.layer_tokens, prompt_tokens), and the least valuable items are dropped until the exact
counts fit. The prompt is rendered once, at the end; the totals in the answer are its exact counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from core.tokens import count_tokens
from router.parts import ALL_PARTS, PackerParts
from router.pricing import layer_tokens, line_tokens, prompt_tokens
from router.rendering import (
    SECTION_SEPARATOR,
    group_header,
    render_layer,
    render_prompt,
    section_footer,
    section_header,
)
from router.types import LAYERS, BudgetPlan, BuiltContext, Candidate, Layer, LayerCandidates

# The layers whose items compete on one relevance scale; the working notes are packed before them, so
# that history, which takes all the room it is given, cannot crowd out the current task's notes.
RANKED_LAYERS: tuple[Layer, ...] = ("procedural", "semantic", "episodic")
SEPARATOR_TOKENS = count_tokens(SECTION_SEPARATOR)


def _density(item: Candidate, cost: int) -> float:
    return item.value / max(cost, 1)


def _rank_key(item: Candidate, cost: int) -> tuple[float, float, float, str, str]:
    return (-_density(item, cost), -item.value, *item.tie())


def _drop(chosen: list[Candidate], item: Candidate) -> None:
    """Remove `item`, and every chosen item that requires it, or requires what it stood in for, unless
    another chosen item is or stands in for that."""
    gone = {item.id, *item.covers}
    chosen.remove(item)
    while True:
        present = {c.id for c in chosen}.union(*(c.covers for c in chosen))
        dependents = [c for c in chosen if c.requires & gone and not c.requires <= present]
        if not dependents:
            return
        for c in dependents:
            chosen.remove(c)
            gone |= {c.id, *c.covers}


def _pack(
    *,
    candidates: Sequence[Candidate],
    cap: Callable[[Layer, dict[Layer, int]], int],
    total: int,
    fmt: str,
    skip: frozenset[str] = frozenset(),
    swap: bool = True,
) -> list[Candidate]:
    """Choose among the candidates of one or more layers by value per token, in one ranking: an item is
    taken when its line (and the section, block and layer separator it opens) fits both its layer's cap,
    `cap(layer, used)` given what each layer uses so far, and what is left of `total`. Fillers (a
    session's summary) are tried only after every other item. Two items that cover each other are
    alternatives (a fact and its source line): the first taken stands in for the other, which may
    replace it at the end, in the room left, when it is worth more (`swap`)."""
    line_cost = {c.id: line_tokens(c) + 1 for c in candidates}
    section_cost: dict[str, int] = {}
    group_cost: dict[str, int] = {}
    # _rank_key, written out: the key of every candidate (hundreds) is made here.
    ranked = sorted(
        candidates, key=lambda c: (c.filler, -(c.value / max(line_cost[c.id], 1)), -c.value, -c.score, c.text, c.id)
    )
    chosen: list[Candidate] = []
    taken: set[str] = set()
    covered: set[str] = set(skip)
    open_sections: set[str] = set()
    open_groups: set[tuple[str, str]] = set()
    used: dict[Layer, int] = {}
    waiting: list[Candidate] = []

    def take(item: Candidate, *, replacing: bool = False) -> bool:
        if (item.id in covered and not replacing) or item.id in taken:
            return False
        cost = line_cost[item.id]
        if item.section not in section_cost:
            footer = section_footer(item.section, fmt)
            section_cost[item.section] = (
                count_tokens(section_header(item.section, fmt)) + SEPARATOR_TOKENS + 1 + count_tokens(footer)
            )
        if item.section not in open_sections:
            cost += section_cost[item.section]
        if item.group_header and (item.section, item.group) not in open_groups:
            if item.group_header not in group_cost:
                group_cost[item.group_header] = count_tokens(group_header(item.group_header, fmt)) + 1
            cost += group_cost[item.group_header]
        # Replacing the chosen items it covers (and that cover it), it takes their place: their lines give
        # back their tokens (a header they opened stays counted).
        evicted = [c for c in chosen if c.id in item.covers] if replacing else []
        after = dict(used) if evicted else used
        for other in evicted:
            after[other.layer] -= line_cost[other.id]
        # Joining a layer's text to the others' costs a separator.
        opens_layer = item.layer not in after
        # The total first: once the budget is nearly full, most items fail it, and the layer's cap is
        # a call that sums the other layers.
        if sum(after.values()) + cost + (SEPARATOR_TOKENS if opens_layer and after else 0) > total or (
            after.get(item.layer, 0) + cost > cap(item.layer, after)
        ):
            return False
        if evicted:
            used.clear()
            used.update(after)
            gone = {c.id for c in evicted}
            chosen[:] = [c for c in chosen if c.id not in gone]
            taken.difference_update(gone)
        used[item.layer] = used.get(item.layer, 0) + cost
        chosen.append(item)
        taken.add(item.id)
        if evicted:
            covered.clear()
            covered.update(skip, *(c.covers for c in chosen))
        else:
            covered.update(item.covers)
        open_sections.add(item.section)
        if item.group_header:
            open_groups.add((item.section, item.group))
        return True

    def present(required: frozenset[str]) -> bool:
        # What an item requires is in when it is taken, or stood in for by a taken item that covers it (a
        # fact for the turn that told it) or by the caller's own transcript (`skip`).
        return all(r in taken or r in covered for r in required)

    for item in ranked:
        if item.requires and not present(item.requires):
            # Tried again once what it needs is in, at its own rank among the others waiting.
            waiting.append(item)
            continue
        if take(item) and waiting:
            ready = True
            while ready:
                ready = False
                for other in list(waiting):
                    if present(other.requires):
                        waiting.remove(other)
                        ready = take(other) or ready
    # Alternatives (a fact and the line it came from cover each other): the one worth more per token was
    # taken first; where the room left allows, the other replaces it when it is worth more.
    for item in ranked if swap else ():
        if item.filler or item.id in taken or taken.isdisjoint(item.covers) or not present(item.requires):
            continue
        replaced = [c for c in chosen if c.id in item.covers]
        if (
            all(item.id in c.covers for c in replaced)
            and item.value > sum(c.value for c in replaced)
            and not any(item.id in c.covers and c.id not in item.covers for c in chosen)
        ):
            take(item, replacing=True)
    return chosen


def _least_valuable(items: Sequence[Candidate]) -> Candidate:
    return max(items, key=lambda c: (c.filler, *_rank_key(c, line_tokens(c) + 1)))


def pack_layer(
    *, layer: Layer, candidates: Sequence[Candidate], grant: int, fmt: str, skip: frozenset[str] = frozenset()
) -> tuple[list[Candidate], str, int]:
    """The chosen items of one layer, their rendered text and its exact token count (<= grant)."""
    if grant <= 0 or not candidates:
        return [], "", 0
    chosen = _pack(candidates=candidates, cap=lambda _layer, _used: grant, total=grant, fmt=fmt, skip=skip)
    tokens, _ = layer_tokens(layer, chosen, fmt)
    while tokens > grant and chosen:
        _drop(chosen, _least_valuable(chosen))
        tokens, _ = layer_tokens(layer, chosen, fmt)
    return chosen, render_layer(layer, chosen, fmt), tokens


def _without_headers(offered: LayerCandidates) -> LayerCandidates:
    """The candidates of the ranked layers listed without their dated block headers."""

    def bare(items: list[Candidate]) -> list[Candidate]:
        return [dataclasses.replace(c, group_header="") if c.group_header else c for c in items]

    return dataclasses.replace(
        offered,
        procedural=bare(offered.procedural),
        semantic=bare(offered.semantic),
        episodic=bare(offered.episodic),
    )


def assemble(*, offered: LayerCandidates, plan: BudgetPlan, fmt: str, parts: PackerParts = ALL_PARTS) -> BuiltContext:
    """Fill the layers within their budgets, render the prompt and account for every token.

    The working notes (the current task, not ranked against the query) are packed first. Procedures,
    facts and history then compete in one ranking by value per token (one relevance scale, see
    router.candidates): each layer's budget is a cap, never a quota filled first. What the other
    layers leave of their budgets is history's to use; what history leaves is the conversation's.
    `parts` (router.parts) may switch off the layer caps, the dated headers and the swap of alternatives."""
    if not parts.day_headers:
        offered = _without_headers(offered)
    remaining = plan.memory
    chosen: dict[Layer, list[Candidate]] = {layer: [] for layer in LAYERS}
    texts: dict[Layer, str] = {layer: "" for layer in LAYERS}
    counts: dict[Layer, int] = {layer: 0 for layer in LAYERS}
    # Each layer's last line, which the prompt's count needs (router.pricing.prompt_tokens).
    lasts: dict[Layer, str] = {layer: "" for layer in LAYERS}
    granted: dict[str, int] = {layer: 0 for layer in LAYERS}
    if plan.working > 0:
        grant = max(0, min(plan.working, remaining - SEPARATOR_TOKENS))
        granted["working"] = grant
        chosen["working"], texts["working"], counts["working"] = pack_layer(
            layer="working", candidates=offered.working, grant=grant, fmt=fmt
        )
        lasts["working"] = layer_tokens("working", chosen["working"], fmt)[1]
        if counts["working"]:
            remaining -= counts["working"] + SEPARATOR_TOKENS
    spare_working = plan.working - counts["working"] if plan.working > 0 else 0
    ranked_layers = [layer for layer in RANKED_LAYERS if plan.of(layer) > 0]

    def cap(layer: Layer, used: dict[Layer, int]) -> int:
        if not parts.layer_caps:
            return max(0, remaining - SEPARATOR_TOKENS)
        if layer != "episodic":
            return max(0, min(plan.of(layer), remaining - SEPARATOR_TOKENS))
        # History may use what the other layers leave of their budgets.
        others = sum(plan.of(other) - used.get(other, 0) for other in ranked_layers if other != "episodic")
        return max(0, min(plan.episodic + spare_working + others, remaining - SEPARATOR_TOKENS))

    pool = [c for layer in ranked_layers for c in offered.of(layer)]
    picked = _pack(candidates=pool, cap=cap, total=max(0, remaining - SEPARATOR_TOKENS), fmt=fmt, swap=parts.swap)
    for layer in ranked_layers:
        chosen[layer] = [c for c in picked if c.layer == layer]
    for layer in ranked_layers:
        counts[layer], lasts[layer] = layer_tokens(layer, chosen[layer], fmt)
    for layer in ranked_layers:
        used = {lay: counts[lay] for lay in ranked_layers}
        granted[layer] = cap(layer, {**used, layer: 0} if layer != "episodic" else used)
        while counts[layer] > granted[layer] and chosen[layer]:
            _drop(chosen[layer], _least_valuable(chosen[layer]))
            counts[layer], lasts[layer] = layer_tokens(layer, chosen[layer], fmt)
    total = prompt_tokens((counts[layer], lasts[layer]) for layer in LAYERS)
    # BPE may merge across a join; drop the least valuable items until the whole fits exactly.
    while total > plan.memory:
        items = [c for layer in (*RANKED_LAYERS, "working") for c in chosen[layer]]
        worst = _least_valuable([c for c in items if c.layer != "working"] or items)
        _drop(chosen[worst.layer], worst)
        counts[worst.layer], lasts[worst.layer] = layer_tokens(worst.layer, chosen[worst.layer], fmt)
        total = prompt_tokens((counts[layer], lasts[layer]) for layer in LAYERS)
    for layer in ranked_layers:
        texts[layer] = render_layer(layer, chosen[layer], fmt)
    prompt = render_prompt(texts[layer] for layer in LAYERS)
    tokens: dict[str, int] = {layer: counts[layer] for layer in LAYERS}
    tokens["total"] = total
    chosen_ids = {c.id for items in chosen.values() for c in items}
    considered = [c for layer in LAYERS for c in offered.of(layer) if c.id not in chosen_ids]
    return BuiltContext(
        prompt=prompt,
        tokens=tokens,
        chosen=chosen,
        considered=considered,
        budgets=plan,
        granted=granted,
        working_document=offered.working_document,
        working_version=offered.working_version,
    )

"""Packing: within each layer's budget, take the items worth most per token; then count exactly.

Costs used for choosing are the token counts of each rendered line plus its newline, and of the
section and group headers an item opens. BPE counts are not exactly additive across joins, so after
choosing, each layer and then the whole prompt are rendered and counted with tiktoken, and the least
valuable items are dropped until the exact counts fit. The totals in the answer are those exact counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from core.tokens import count_tokens
from router.rendering import (
    LINE_PREFIX,
    SECTION_SEPARATOR,
    group_header,
    item_line,
    render_layer,
    render_prompt,
    section_footer,
    section_header,
)
from router.types import LAYERS, BudgetPlan, BuiltContext, Candidate, Layer, LayerCandidates

# Filled first to last; rendered in LAYERS order. Working comes before episodic so that history, which
# takes all the room it is given, cannot crowd out the current task's notes.
FILL_ORDER: tuple[Layer, ...] = ("procedural", "semantic", "working", "episodic")
SEPARATOR_TOKENS = count_tokens(SECTION_SEPARATOR)


def line_tokens(item: Candidate) -> int:
    """Tokens of the item's rendered line (without its newline), counted once per candidate."""
    if item.line_tokens < 0:
        item.line_tokens = count_tokens(item_line(item))
    return item.line_tokens


@lru_cache(maxsize=1024)
def _said_prefix(speaker: str) -> tuple[int, int]:
    head = f"{speaker}:" if speaker else ""
    return count_tokens(head), count_tokens(LINE_PREFIX + head if head else LINE_PREFIX.rstrip())


@lru_cache(maxsize=65_536)
def _leading_space_tokens(word: str) -> int:
    return count_tokens(" " + word) - count_tokens(word)


def said_tokens(speaker: str, content: str, content_tokens: int) -> tuple[int, int] | None:
    """The exact token counts of the text `{speaker}: {content}` (or `content` alone without a
    speaker) and of its rendered line, from the content's stored count (Episode.token_count), without
    running the tokeniser over the line: a context prices hundreds of episode lines, and counting each
    cost more than the rest of building it.

    Exact because cl100k splits text into chunks before merging, and merges never cross a chunk: the
    line "- {speaker}: {content}" is the chunks of "- {speaker}:" followed by those of " {content}",
    which are the content's own but for its first word, which takes the space. The caller guarantees
    that the content is normalised (single spaces, no other whitespace, not empty) and that
    `content_tokens` is its count; None when the count is unusable. tests/router/test_packing.py checks
    the identity on random texts."""
    if content_tokens <= 0 or not content:
        return None
    spaced = content_tokens + _leading_space_tokens(content.split(" ", 1)[0])
    head, line_head = _said_prefix(speaker)
    return (head + spaced if speaker else content_tokens), line_head + spaced


def _density(item: Candidate, cost: int) -> float:
    return item.value / max(cost, 1)


def _rank_key(item: Candidate, cost: int) -> tuple[float, float, str]:
    return (-_density(item, cost), -item.value, item.id)


def _drop(chosen: list[Candidate], item: Candidate) -> None:
    """Remove `item`, and every chosen item that requires it."""
    gone = {item.id}
    chosen.remove(item)
    while dependents := [c for c in chosen if c.requires & gone]:
        for c in dependents:
            chosen.remove(c)
            gone.add(c.id)


def pack_layer(
    *, layer: Layer, candidates: Sequence[Candidate], grant: int, fmt: str, skip: frozenset[str] = frozenset()
) -> tuple[list[Candidate], str, int]:
    """The chosen items of one layer, their rendered text and its exact token count (<= grant)."""
    if grant <= 0 or not candidates:
        return [], "", 0
    line_cost = {c.id: line_tokens(c) + 1 for c in candidates}
    section_cost: dict[str, int] = {}
    group_cost: dict[str, int] = {}
    ranked = sorted(candidates, key=lambda c: _rank_key(c, line_cost[c.id]))
    chosen: list[Candidate] = []
    taken: set[str] = set()
    covered: set[str] = set(skip)
    open_sections: set[str] = set()
    open_groups: set[tuple[str, str]] = set()
    waiting: list[Candidate] = []
    used = 0

    def take(item: Candidate) -> bool:
        nonlocal used
        if item.id in covered or item.id in taken:
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
            group_cost.setdefault(item.group_header, count_tokens(group_header(item.group_header, fmt)) + 1)
            cost += group_cost[item.group_header]
        if used + cost > grant:
            return False
        used += cost
        chosen.append(item)
        taken.add(item.id)
        covered.update(item.covers)
        open_sections.add(item.section)
        if item.group_header:
            open_groups.add((item.section, item.group))
        return True

    for item in ranked:
        if not item.requires <= taken:
            # Tried again once what it needs is in, at its own rank among the others waiting.
            waiting.append(item)
            continue
        if take(item) and waiting:
            ready = True
            while ready:
                ready = False
                for other in list(waiting):
                    if other.requires <= taken:
                        waiting.remove(other)
                        ready = take(other) or ready
    text = render_layer(layer, chosen, fmt)
    tokens = count_tokens(text)
    while tokens > grant and chosen:
        _drop(chosen, max(chosen, key=lambda c: _rank_key(c, line_cost[c.id])))
        text = render_layer(layer, chosen, fmt)
        tokens = count_tokens(text)
    return chosen, text, tokens


def assemble(*, offered: LayerCandidates, plan: BudgetPlan, fmt: str) -> BuiltContext:
    """Fill the layers within their budgets, render the prompt and account for every token."""
    remaining = plan.memory
    chosen: dict[Layer, list[Candidate]] = {layer: [] for layer in LAYERS}
    texts: dict[Layer, str] = {layer: "" for layer in LAYERS}
    # Each layer's exact count, kept from packing: a layer's text runs to thousands of tokens, and
    # counting it again costs as much as counting it the first time.
    counts: dict[Layer, int] = {layer: 0 for layer in LAYERS}
    granted: dict[str, int] = {}
    rollover = 0
    covered: set[str] = set()
    for layer in FILL_ORDER:
        budget = plan.of(layer)
        if budget <= 0:
            granted[layer] = 0
            continue
        if layer == "episodic":
            budget += rollover
        # Joining this layer to the others costs a separator.
        grant = max(0, min(budget, remaining - SEPARATOR_TOKENS))
        granted[layer] = grant
        items, text, used = pack_layer(
            layer=layer, candidates=offered.of(layer), grant=grant, fmt=fmt, skip=frozenset(covered)
        )
        chosen[layer], texts[layer], counts[layer] = items, text, used
        for item in items:
            covered.update(item.covers)
        if used:
            remaining -= used + SEPARATOR_TOKENS
        if layer != "episodic":
            rollover += grant - used
    prompt = render_prompt(texts[layer] for layer in LAYERS)
    total = count_tokens(prompt)
    # BPE may merge across a join; drop the least valuable items until the whole fits exactly.
    while total > plan.memory:
        layer = next(lay for lay in reversed(FILL_ORDER) if chosen[lay])
        _drop(chosen[layer], min(chosen[layer], key=lambda c: (c.value, c.id)))
        texts[layer] = render_layer(layer, chosen[layer], fmt)
        counts[layer] = count_tokens(texts[layer])
        prompt = render_prompt(texts[layer] for layer in LAYERS)
        total = count_tokens(prompt)
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

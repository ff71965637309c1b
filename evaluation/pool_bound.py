"""What bounds recall (issue 41): the ranking inside the pool the router considers, or the pool itself.

For one context request, the pool is what its trace logged: the items offered (served) and the best of
those considered and left out (router.services.MAX_CONSIDERED_IN_TRACE of them, by value). Each pool
item is resolved to its text and sources (the served ones as the answer showed them, the others from
the stored rows, `manage.py pool_bound`). Then, per question:

- served: grounded recall_all of the served items, scored as memory_eval scores them
  (evaluation.recall: resolve_sources, grounded_found);
- pool coverage: every evidence turn is grounded by some item of the pool, whatever it costs;
- the oracle ceiling: some set of pool items grounds every evidence turn and its prompt fits the memory
  budget, priced by the router's own pricing (router.pricing: each line's logged tokens, the newlines,
  the section and day headers the items open, the joins between layers). The cheapest cover is found by
  an exact dynamic programme over the union of evidence turns grounded, once with each line costing
  its tokens and newline, once with every header an item may open charged to it; each set found is
  then priced exactly, and the question counts when one fits. A cover whose lines fit but whose exact
  price does not in either set is counted `undecided` (not in the ceiling);
- the same ceiling over episodic passages only (turns and excerpts of them: no facts, no summaries);
- answer containment: served (the prompt), in the pool (the pool's texts and day headers together hold
  every content term of the gold answer), and its ceiling (a set of items within the budget does).

What the ceiling leaves out: an older statement labelled "(earlier)" requires its update in the
packer; the oracle may serve it alone. Items the trace did not keep (considered beyond the cap) are
not in the pool.
"""

from __future__ import annotations

import dataclasses
import statistics
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from core.lines import said_line
from core.tokens import count_tokens
from evaluation.grounding import answer_terms, content_terms
from evaluation.recall import (
    CATEGORIES,
    HALVES,
    Evidence,
    Question,
    ServedItem,
    Span,
    grounded_found,
    resolve_sources,
)
from router.packing import SEPARATOR_TOKENS
from router.pricing import layer_tokens, prompt_tokens
from router.rendering import format_day, group_header, section_footer, section_header
from router.types import LAYERS, Candidate, Layer
from tenants.models import Tenant
from tenants.scope import tenant_scope

# A cover of more evidence turns or answer terms than this is not searched (counted apart).
MAX_NEEDED = 20


@dataclass(frozen=True)
class PoolItem:
    """One item of a request's pool: as the trace logged it (id, type, layer, line tokens) with its text
    and sources resolved, the section and day block it renders in, and whether it was served."""

    id: str
    type: str
    layer: Layer
    section: str
    text: str
    tokens: int
    sources: tuple[tuple[str, Span | None], ...]
    group: str = ""
    group_header: str = ""
    served: bool = False
    # Among the considered items, its place by value (0 best); -1 when served.
    rank: int = -1
    # The value packing ranks it by (the formula's, or a learned one's), and whether it is a filler.
    value: float = 0.0
    filler: bool = False

    @property
    def passage(self) -> bool:
        """An episodic passage: a turn, or an excerpt of one (not a fact, not a session summary)."""
        return self.type == "episode"


# --- pricing -----------------------------------------------------------------------------------
def _candidate(item: PoolItem, order: int) -> Candidate:
    return Candidate(
        id=item.id,
        type=item.type,
        layer=item.layer,
        section=item.section,
        text=item.text,
        value=0.0,
        score=0.0,
        score_parts={},
        group=item.group,
        group_header=item.group_header,
        order=(item.group, order),
        line_tokens=item.tokens,
    )


def context_tokens(items: Sequence[PoolItem], fmt: str = "markdown") -> int:
    """The exact tokens of the prompt these items render to, by the router's pricing (router.pricing),
    from each line's logged tokens."""
    by_layer: dict[Layer, list[Candidate]] = {}
    for n, item in enumerate(items):
        by_layer.setdefault(item.layer, []).append(_candidate(item, n))
    return prompt_tokens(layer_tokens(layer, by_layer[layer], fmt) for layer in LAYERS if layer in by_layer)


@lru_cache(maxsize=4096)
def _count(text: str) -> int:
    return count_tokens(text) if text else 0


def line_cost(item: PoolItem) -> int:
    """What packing charges for the item's line: its tokens and its newline."""
    return item.tokens + 1


def opening_cost(item: PoolItem, fmt: str = "markdown") -> int:
    """The most an item's line can cost with what it may open: its section (header, footer, the
    separator before it), its day block's header, and the separator that joins its layer to the others."""
    section = (
        _count(section_header(item.section, fmt)) + SEPARATOR_TOKENS + 1 + _count(section_footer(item.section, fmt))
    )
    block = _count(group_header(item.group_header, fmt)) + 1 if item.group_header else 0
    return line_cost(item) + section + block + SEPARATOR_TOKENS


# --- the cheapest cover ------------------------------------------------------------------------
def cheapest_cover(options: Sequence[tuple[int, int]], need: int) -> tuple[int, ...] | None:
    """The indices of the options (mask, cost) whose masks together hold every bit of `need`, at the
    least total cost (exact for additive costs: a dynamic programme over the unions reachable); None when
    all of them together do not. Of options with the same bits only the cheapest can be in an optimum."""
    cheapest: dict[int, int] = {}
    for i, (mask, cost) in enumerate(options):
        bits = mask & need
        if bits and (bits not in cheapest or cost < options[cheapest[bits]][1]):
            cheapest[bits] = i
    best: dict[int, tuple[int, tuple[int, ...]]] = {0: (0, ())}
    for bits, i in cheapest.items():
        cost = options[i][1]
        for have, (spent, chosen) in list(best.items()):
            union = have | bits
            if union == have:
                continue
            if union not in best or spent + cost < best[union][0]:
                best[union] = (spent + cost, (*chosen, i))
    return best[need][1] if need in best else None


@dataclass(frozen=True)
class Cover:
    """The cheapest set of pool items found that holds everything needed: its exact tokens, and whether
    it fits the limit; `undecided` when the lines alone fit but no set found fits once priced."""

    tokens: int | None
    fits: bool
    undecided: bool = False
    searched: bool = True


NO_COVER = Cover(None, False)


def best_cover(
    items: Sequence[PoolItem], masks: Sequence[int], need: int, *, limit: int, fmt: str = "markdown"
) -> Cover:
    """The cheapest cover of `need` by the items (each holding its mask's bits), priced exactly."""
    if need == 0:
        return Cover(0, True)
    if need.bit_length() > MAX_NEEDED:
        return Cover(None, False, searched=False)
    relevant = [(item, mask) for item, mask in zip(items, masks, strict=True) if mask & need]
    found: list[int] = []
    lower: int | None = None
    for price in (line_cost, lambda item: opening_cost(item, fmt)):
        chosen = cheapest_cover([(mask, price(item)) for item, mask in relevant], need)
        if chosen is None:
            return NO_COVER
        if lower is None:
            lower = sum(line_cost(relevant[i][0]) for i in chosen)
        found.append(context_tokens([relevant[i][0] for i in chosen], fmt))
    tokens = min(found)
    fits = tokens <= limit
    return Cover(tokens, fits, undecided=not fits and lower is not None and lower <= limit)


# --- what each item holds ----------------------------------------------------------------------
def evidence_masks(
    question: Question,
    items: Sequence[PoolItem],
    contents: Mapping[str, str],
    turn_terms: Callable[[Evidence], frozenset[str]],
) -> list[int]:
    """For each item, the bits of the question's evidence turns it grounds (evaluation.recall's rule)."""
    wanted = {e.external_id for e in question.evidence}
    masks = []
    for item in items:
        mask = 0
        if any(external_id in wanted for external_id, _ in item.sources):
            served = resolve_sources([ServedItem(item.text, 0, item.sources)], contents)
            for k, e in enumerate(question.evidence):
                if grounded_found(e, served, turn_terms(e)).found:
                    mask |= 1 << k
        masks.append(mask)
    return masks


@lru_cache(maxsize=65_536)
def _item_terms(text: str, header: str) -> frozenset[str]:
    return content_terms(text) | content_terms(header)


def answer_masks(answer: Sequence[str], items: Sequence[PoolItem]) -> list[int]:
    """For each item, the bits of the answer's content terms its line or its day header holds."""
    out = []
    for item in items:
        held = _item_terms(item.text, item.group_header)
        out.append(sum(1 << k for k, term in enumerate(answer) if term in held))
    return out


# --- one question --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Bound:
    """One question asked at one budget: grounded recall_all served, in the pool, within reach of an
    oracle packer of the pool (all items; passages only), the cheapest cover's tokens; the same for the
    gold answer's terms (None: the question has no answer with content terms)."""

    served: bool
    covered: bool
    ceiling: bool
    covered_passages: bool
    ceiling_passages: bool
    cover_tokens: int | None
    undecided: bool
    searched: bool
    pool: int
    # Pool coverage within the items a trace keeps by default (served, and the best `logged` considered).
    covered_logged: bool = False
    # How deep the evidence lies in the packer's order: the lines' tokens (with their newlines) taken in
    # order of value per token until every evidence turn is grounded (None: the pool does not cover it).
    depth: int | None = None
    answer_served: bool | None = None
    answer_pool: bool | None = None
    answer_ceiling: bool | None = None
    answer_ceiling_passages: bool | None = None


def bound(
    question: Question,
    items: Sequence[PoolItem],
    *,
    limit: int,
    contents: Mapping[str, str],
    turn_terms: Callable[[Evidence], frozenset[str]],
    answer_served: bool | None = None,
    fmt: str = "markdown",
    logged: int = 200,
) -> Bound:
    """How the question stands against the pool of one request with `limit` memory tokens; `logged`: the
    considered items a trace keeps by default (router.services.MAX_CONSIDERED_IN_TRACE)."""
    served_items = [i for i in items if i.served]
    served_masks = evidence_masks(question, served_items, contents, turn_terms)
    need = (1 << len(question.evidence)) - 1
    served = _union(served_masks) == need
    masks = evidence_masks(question, items, contents, turn_terms)
    passages = [k for k, item in enumerate(items) if item.passage]
    p_items, p_masks = [items[k] for k in passages], [masks[k] for k in passages]
    cover = best_cover(items, masks, need, limit=limit, fmt=fmt) if _union(masks) == need else NO_COVER
    p_cover = best_cover(p_items, p_masks, need, limit=limit, fmt=fmt) if _union(p_masks) == need else NO_COVER
    out = Bound(
        served=served,
        covered=_union(masks) == need,
        # What was served fits: the oracle never does worse (a pricing slip would show as a gap here).
        ceiling=cover.fits or served,
        covered_passages=_union(p_masks) == need,
        ceiling_passages=p_cover.fits,
        cover_tokens=cover.tokens,
        undecided=cover.undecided and not served,
        searched=cover.searched,
        pool=len(items),
        covered_logged=_union(m for m, item in zip(masks, items, strict=True) if item.rank < logged) == need,
        depth=evidence_depth(items, masks, need),
    )
    wanted = sorted(answer_terms(question.answer)) if question.answer else []
    if not wanted:
        return out
    a_need = (1 << len(wanted)) - 1
    a_masks = answer_masks(wanted, items)
    in_pool = _union(a_masks) == a_need
    a_cover = best_cover(items, a_masks, a_need, limit=limit, fmt=fmt) if in_pool else NO_COVER
    pa_masks = [a_masks[k] for k in passages]
    pa_cover = best_cover(p_items, pa_masks, a_need, limit=limit, fmt=fmt) if _union(pa_masks) == a_need else NO_COVER
    return dataclasses.replace(
        out,
        answer_served=answer_served,
        answer_pool=in_pool or bool(answer_served),
        answer_ceiling=a_cover.fits or bool(answer_served),
        answer_ceiling_passages=pa_cover.fits,
    )


def evidence_depth(items: Sequence[PoolItem], masks: Sequence[int], need: int) -> int | None:
    """The tokens of the lines taken in the packer's order (router.packing: fillers last, then by value per
    token, then by value) until the masks taken hold `need`; None when the whole pool does not."""
    order = sorted(
        range(len(items)),
        key=lambda k: (items[k].filler, -items[k].value / max(line_cost(items[k]), 1), -items[k].value, items[k].id),
    )
    have = spent = 0
    for k in order:
        spent += line_cost(items[k])
        have |= masks[k]
        if have & need == need:
            return spent
    return None


def _union(masks: Iterable[int]) -> int:
    out = 0
    for mask in masks:
        out |= mask
    return out


# --- tallies and the report ----------------------------------------------------------------------
FIGURES = (
    ("served", "served"),
    ("pool coverage", "covered"),
    ("pool coverage, logged", "covered_logged"),
    ("ceiling", "ceiling"),
    ("pool coverage, passages", "covered_passages"),
    ("ceiling, passages", "ceiling_passages"),
)
ANSWER_FIGURES = (
    ("served", "answer_served"),
    ("in the pool", "answer_pool"),
    ("ceiling", "answer_ceiling"),
    ("ceiling, passages", "answer_ceiling_passages"),
)


@dataclass
class BoundTally:
    bounds: list[Bound] = field(default_factory=list)
    reference: list[bool] = field(default_factory=list)

    def add(self, b: Bound, reference: bool | None = None) -> None:
        self.bounds.append(b)
        if reference is not None:
            self.reference.append(reference)

    def share(self, key: str) -> float | None:
        values = [getattr(b, key) for b in self.bounds if getattr(b, key) is not None]
        return sum(map(bool, values)) / len(values) if values else None

    def summary(self) -> dict[str, Any]:
        tokens = sorted(b.cover_tokens for b in self.bounds if b.covered and b.cover_tokens is not None)
        depths = sorted(b.depth for b in self.bounds if b.depth is not None)
        out: dict[str, Any] = {
            "n": len(self.bounds),
            "memory_eval": sum(self.reference) / len(self.reference) if self.reference else None,
            **{key: self.share(key) for _, key in (*FIGURES, *ANSWER_FIGURES)},
            "answers": sum(b.answer_served is not None for b in self.bounds),
            "undecided": sum(b.undecided for b in self.bounds),
            "not_searched": sum(not b.searched for b in self.bounds),
            "pool_mean": statistics.fmean(b.pool for b in self.bounds) if self.bounds else None,
            "cover_tokens_median": statistics.median(tokens) if tokens else None,
            "cover_tokens_p90": tokens[min(len(tokens) - 1, int(0.9 * len(tokens)))] if tokens else None,
            "depth_median": statistics.median(depths) if depths else None,
            "depth_p75": depths[min(len(depths) - 1, int(0.75 * len(depths)))] if depths else None,
        }
        return out


def tally(
    rows: Iterable[tuple[Question, int, str, Bound, bool | None]],
) -> dict[tuple[int, str, str], BoundTally]:
    """Per budget, half (first / second / all) and group: (question, budget, half, bound, memory_eval's
    grounded figure for it or None); the groups are memory_eval's (Question.groups)."""
    out: dict[tuple[int, str, str], BoundTally] = {}
    for question, budget, half, b, reference in rows:
        for key in question.groups:
            for h in (half, "all"):
                out.setdefault((budget, h, key), BoundTally()).add(b, reference)
    return out


def _f(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def bound_table(
    summaries: Mapping[tuple[int, str, str], Mapping[str, Any]],
    *,
    budgets: Sequence[int],
    halves: Mapping[str, str],
    group: str = "overall",
) -> list[str]:
    """One row per budget and half: memory_eval's figure, served, pool coverage, the ceilings and the gap."""
    head = [
        "budget", "half", "n", "memory_eval", *(label for label, _ in FIGURES), "ceiling − served", "undecided",
        "evidence depth (median / p75 tokens)",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---:|---|" + "---:|" * (len(head) - 2)]
    for budget in budgets:
        for h in HALVES:
            s = summaries.get((budget, h, group))
            if not s:
                continue
            gap = s["ceiling"] - s["served"] if s["ceiling"] is not None and s["served"] is not None else None
            cells = [str(budget), halves.get(h, h), str(s["n"]), _f(s["memory_eval"])]
            cells += [_f(s[key]) for _, key in FIGURES]
            cells += ["–" if gap is None else f"{gap:+.3f}", str(s["undecided"])]
            cells.append(f"{_f(s['depth_median'], 0)} / {_f(s['depth_p75'], 0)}")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def answer_table(
    summaries: Mapping[tuple[int, str, str], Mapping[str, Any]],
    *,
    budgets: Sequence[int],
    halves: Mapping[str, str],
    group: str = "overall",
) -> list[str]:
    head = ["budget", "half", "answers", *(label for label, _ in ANSWER_FIGURES)]
    lines = ["| " + " | ".join(head) + " |", "|---:|---|" + "---:|" * (len(head) - 2)]
    for budget in budgets:
        for h in HALVES:
            s = summaries.get((budget, h, group))
            if not s or not s["answers"]:
                continue
            cells = [str(budget), halves.get(h, h), str(s["answers"]), *(_f(s[key]) for _, key in ANSWER_FIGURES)]
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def category_table(
    summaries: Mapping[tuple[int, str, str], Mapping[str, Any]], *, budget: int, categories: Sequence[str]
) -> list[str]:
    """Per category, over all questions, at one budget's pool: how many, pool coverage, the ceiling and
    served, and the tokens the cheapest cover of the evidence takes (median, 90th percentile)."""
    head = [
        "category", "n", "served", "pool coverage", "ceiling", "cover tokens (median)", "cover tokens (p90)",
        "evidence depth (median)",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for category in categories:
        s = summaries.get((budget, "all", category))
        if not s:
            continue
        lines.append(
            f"| {category} | {s['n']} | {_f(s['served'])} | {_f(s['covered'])} | {_f(s['ceiling'])} | "
            f"{_f(s['cover_tokens_median'], 0)} | {_f(s['cover_tokens_p90'], 0)} | {_f(s['depth_median'], 0)} |"
        )
    return lines


LOCOMO_CATEGORIES = tuple(CATEGORIES[c] for c in (1, 2, 3, 4))


# --- reading a trace's pool ------------------------------------------------------------------------
def _section(layer: str, parts: Mapping[str, Any]) -> str:
    if layer == "semantic":
        return "Known facts"
    if layer == "procedural":
        return "Procedures"
    if layer == "working":
        return "Working notes"
    return "Recent activity" if "recency_rank" in parts or "latest_rank" in parts else "Relevant history"


@dataclass(frozen=True)
class _Stored:
    """What the stored rows say of an item the trace names: its text, sources, day and session."""

    text: str
    sources: tuple[tuple[str, Span | None], ...]
    day: datetime | None
    session: str = ""


def _logged_sources(row: Mapping[str, Any]) -> tuple[tuple[str, Span | None], ...]:
    return tuple(
        (str(s["external_id"]), (int(s["span"][0]), int(s["span"][1])) if s.get("span") else None)
        for s in row.get("sources") or ()
        if s.get("external_id")
    )


def stored_items(*, tenant: Tenant, ids: Iterable[str]) -> dict[str, _Stored]:
    """Each item id of a trace (passage:, episode:, fact:, summary:) resolved to its text and sources as
    the router builds them (router.candidates: the passage's stored line, the episode's said line, the
    fact's statement with its day and confidence, the session's summary); a summary's source is filled
    by pool_of (the pool's first hit of its session). Ids of other kinds are left out."""
    from episodic.models import Episode, Passage, Session
    from semantic.models import Fact
    from semantic.selectors import fact_sources

    by_kind: dict[str, set[str]] = {}
    for item_id in ids:
        kind, _, key = item_id.partition(":")
        by_kind.setdefault(kind, set()).add(key)
    out: dict[str, _Stored] = {}
    with tenant_scope(tenant):
        passages = Passage.objects.filter(id__in=[int(k) for k in by_kind.get("passage", ())]).values_list(
            "id", "line", "char_start", "char_end", "occurred_at", "episode__external_id", "session__external_id"
        )
        for pid, line, start, end, when, external_id, session in passages:
            out[f"passage:{pid}"] = _Stored(
                line, ((str(external_id), (start, end)),) if external_id else (), when, session
            )
        episodes = Episode.objects.filter(id__in=[int(k) for k in by_kind.get("episode", ())]).values_list(
            "id", "role", "kind", "content", "occurred_at", "external_id", "session__external_id"
        )
        for eid, role, kind, content, when, external_id, session in episodes:
            whole: tuple[tuple[str, Span | None], ...] = ((str(external_id), (0, len(content))),) if external_id else ()
            out[f"episode:{eid}"] = _Stored(said_line(role or kind, content), whole, when, session)
        fact_ids = [uuid.UUID(k) for k in by_kind.get("fact", ())]
        facts = Fact.objects.filter(id__in=fact_ids).values_list("id", "statement", "valid_from", "confidence")
        cited = fact_sources(tenant=tenant, fact_ids=fact_ids)
        for fid, statement, valid_from, confidence in facts:
            text = f"{statement} ({format_day(valid_from)}, confidence {confidence:.2f})"
            told: tuple[tuple[str, Span | None], ...] = tuple(
                (str(s.external_id), None) for s in cited.get(fid, []) if s.external_id
            )
            out[f"fact:{fid}"] = _Stored(text, told, valid_from)
        sessions = Session.objects.filter(external_id__in=by_kind.get("summary", ())).values_list(
            "external_id", "summary", "started_at"
        )
        for session, summary, started_at in sessions:
            if summary:
                out[f"summary:{session}"] = _Stored(f"summary: {' '.join(summary.split())}", (), started_at, session)
    return out


def pool_of(trace: Any, stored: Mapping[str, _Stored]) -> tuple[list[PoolItem], dict[str, int]]:
    """A trace's pool (offered, then considered) as PoolItems, and how many of its items could not be
    resolved (by kind). Served items keep the text and sources the answer showed; the others take the
    stored ones; a summary left out cites the session's first search hit in the pool (as the router's
    summary does, router.candidates.episodic.summary_candidates)."""
    rows = [(row, True) for row in trace.offered] + [(row, False) for row in trace.considered]
    ranks = {id(row): n for n, row in enumerate(trace.considered)}
    first_hit: dict[str, tuple[float, tuple[tuple[str, Span | None], ...]]] = {}
    for row, _ in rows:
        parts = row.get("score_parts") or {}
        found = stored.get(str(row["id"]))
        if row.get("type") == "episode" and "fused" in parts and found is not None and found.session:
            fused = float(parts["fused"])
            if found.session not in first_hit or fused > first_hit[found.session][0]:
                first_hit[found.session] = (fused, tuple((x, None) for x, _ in found.sources))
    items: list[PoolItem] = []
    missing: dict[str, int] = {}
    for row, served in rows:
        item_id = str(row["id"])
        found = stored.get(item_id)
        if found is None and not served:
            kind = item_id.partition(":")[0]
            missing[kind] = missing.get(kind, 0) + 1
            continue
        layer = str(row.get("layer") or "episodic")
        if served:
            text, sources = str(row["text"]), _logged_sources(row)
        else:
            assert found is not None
            text, sources = found.text, found.sources
            if item_id.startswith("summary:") and not sources:
                sources = first_hit.get(found.session, (0.0, ()))[1]
        day = found.day if found is not None else None
        blocked = layer == "episodic" and day is not None
        items.append(
            PoolItem(
                id=item_id,
                type=str(row.get("type", "")),
                layer=layer,  # type: ignore[arg-type]
                section=_section(layer, row.get("score_parts") or {}),
                text=text,
                tokens=int(row["tokens"]),
                sources=sources,
                group=day.date().isoformat() if blocked and day is not None else "",
                group_header=format_day(day) if blocked and day is not None else "",
                served=served,
                rank=-1 if served else ranks[id(row)],
                value=float(row.get("value") or 0.0),
                filler=bool(row.get("filler")),
            )
        )
    return items, missing


def fidelity(trace: Any, items: Sequence[PoolItem], stored: Mapping[str, _Stored]) -> dict[str, list[int]]:
    """How well the stored rows rebuild what a trace served, by kind: [served, same text, same sources];
    a summary's sources are the pool's first hit of its session (as pool_of gives them to one left out)."""
    out: dict[str, list[int]] = {}
    rebuilt = {i.id: i for i in pool_of(_Unserved(trace), stored)[0]}
    for item in items:
        if not item.served:
            continue
        kind = item.id.partition(":")[0]
        tally = out.setdefault(kind, [0, 0, 0])
        tally[0] += 1
        other = rebuilt.get(item.id)
        if other is not None:
            tally[1] += other.text == item.text
            tally[2] += set(other.sources) == set(item.sources)
    return out


@dataclass(frozen=True)
class _Unserved:
    """A trace read as if nothing had been served: every item rebuilt from the stored rows."""

    trace: Any

    @property
    def offered(self) -> list[Any]:
        return []

    @property
    def considered(self) -> list[Any]:
        return [*self.trace.offered, *self.trace.considered]

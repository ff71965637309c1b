"""The semantic layer's candidates: the subject's facts that matter for the query, under the layer's
floor and without fragments, each with the episodes it came from."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from concurrent.futures import Future
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from core.lru import byte_lru_cache
from core.terms import terms
from episodic.aliases import Aliases
from router.candidates.common import (
    HeuristicWeights,
    clip,
    fact_features,
    length_scaled,
    on_history_scale,
    query_words,
)
from router.pricing import line_tokens
from router.rendering import format_day
from router.timeframe import Timeframe
from router.types import Candidate, ContextRequest, Source
from semantic.models import FactOrigin
from semantic.selectors import fact_search_rows, facts_for_subject
from semantic.selectors import fact_sources as semantic_fact_sources
from semantic.validation import fact_value_is_fragment
from tenants.models import Tenant


def fact_above_floor(parts: dict[str, float], w: HeuristicWeights, *, names_attribute: bool = False) -> bool:
    """A fact found for a query clears the semantic layer's floor: a query word matches its statement
    (score part `text`, which is 0 without a match) or names its attribute ("which editor?" and
    `editor`), or its vector is more similar than the floor."""
    return names_attribute or parts.get("text", 0.0) > 0.0 or parts.get("vector", 0.0) > w.fact_min_similarity


def names_attribute(words: frozenset[str], attribute: str) -> bool:
    """Whether a word of the query (`query_words`) is a word of the attribute's name (`home_city`:
    home, city)."""
    return any(part in words for part in attribute.casefold().replace("-", "_").split("_") if len(part) > 2)


# The test is a pure function of the value (regular expressions over its words) and cost more than the
# rest of a request's fact candidates together: each value is tested once per process, not once per
# request that reads it.
_value_is_fragment = byte_lru_cache(4 * 1024 * 1024)(fact_value_is_fragment)


def served_fact(value: str, origin: str) -> bool:
    """Whether a fact may be served: one extracted with a fragment for its value ("13)", "want") is not,
    whenever it was extracted (extraction has rejected such values since; see semantic.validation).
    A value a client or operator wrote is served as written."""
    return origin != FactOrigin.EXTRACTED or not _value_is_fragment(value)


def facts_as_of(request: ContextRequest, frame: Timeframe | None) -> datetime | None:
    """The moment facts are read at: the request's `as_of`; else, when the query names a time that is
    over ("last year", "in May 2023", "before the move"), its last instant (the window is half-open: a
    value observed at its end, such as the city the move brought, is not yet held), so that what was
    true then is served."""
    if request.as_of is not None or frame is None or frame.end is None:
        return request.as_of
    return frame.end - timedelta(microseconds=1) if frame.end <= (request.now or timezone.now()) else None


def fact_sources(*, tenant: Tenant, fact_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[Source]]:
    """The episodes each fact came from (semantic.selectors.fact_sources), oldest first."""

    refs = semantic_fact_sources(tenant=tenant, fact_ids=fact_ids)
    return {
        fact_id: [
            Source(episode_id=r.episode_id, external_id=r.external_id, occurred_at=r.occurred_at, session=r.session)
            for r in items
        ]
        for fact_id, items in refs.items()
    }


def fact_candidates(
    *,
    tenant: Tenant,
    request: ContextRequest,
    embedding: list[float] | Future[list[float]] | None,
    frame: Timeframe | None,
    w: HeuristicWeights,
    entities: Sequence[str] | None = None,
    aliases: Aliases | None = None,
) -> list[Candidate]:
    """The subject's facts that matter for the query (or its facts without one). `entities`: the
    query's, when the caller has extracted them (episodic.extraction) already; `aliases`: theirs, when
    the caller has looked them up."""

    scored: list[tuple[Any, float, dict[str, float]]]
    if request.query.strip():
        words = query_words(request.query)
        results = fact_search_rows(
            tenant=tenant,
            query=request.query,
            subject=request.subject,
            k=50,
            as_of=facts_as_of(request, frame),
            query_embedding=embedding,
            entities=entities,
            aliases=aliases,
        )
        scored = [
            (r, r.score, {**r.score_parts, "update": 1.0} if r.updates else dict(r.score_parts))
            for r in results
            if served_fact(r.value, r.origin)
            and fact_above_floor(r.score_parts, w, names_attribute=names_attribute(words, r.attribute))
        ]
    else:
        facts = facts_for_subject(tenant=tenant, subject=request.subject, as_of=request.as_of)
        scored = [
            (f, f.confidence, {"confidence": f.confidence}) for f in list(facts)[:50] if served_fact(f.value, f.origin)
        ]
    if not scored:
        return []
    top = max(s for _, s, _ in scored) or 1.0
    sources = fact_sources(tenant=tenant, fact_ids=[f.id for f, _, _ in scored])
    out = []
    for rank, (fact, score, parts) in enumerate(scored):
        # Searched facts are valued on history's scale by their calibrated relevance; without a query
        # (no history is searched) by their score relative to the best fact's.
        value = (
            on_history_scale(w.fact_logit, fact_features(parts), w)
            if "vector" in parts
            else (max(score, 0.0) / top) ** w.sharpness + 1e-6
        )
        of_fact = sources.get(fact.id, [])
        candidate = Candidate(
            id=f"fact:{fact.id}",
            type="fact",
            layer="semantic",
            section="Known facts",
            text=clip(
                f"{fact.statement} ({format_day(fact.valid_from)}, confidence {fact.confidence:.2f})",
                w.fact_max_tokens,
            ),
            value=value,
            score=score,
            score_parts=parts,
            sources=of_fact,
            occurred_at=fact.valid_from,
            order=(rank,),
            covers=frozenset(f"episode:{s.episode_id}" for s in of_fact),
        )
        out.append(length_scaled(candidate, w) if "vector" in parts else candidate)
    return out


def fact_worth(facts: Sequence[Candidate], episodes: Sequence[Candidate]) -> None:
    """A fact restates the turns it came from: for the query, it is worth no more than the best line of
    history that cites one of them, and, where history's search found none of them, no more than the
    least valuable line history offers. History's search reads the whole turn, its session and its
    neighbours; a fact's short statement can match a question's words while its turn does not (LoCoMo at
    1K, reader off: of the facts served, those whose turn history ranked below its 60th line or did not
    find were evidence 14 times in 7,469, 0.07 per 1,000 tokens, where a line of history served was
    1.55; those whose turn ranked in its first 20 and that were worth no more than it, 8.77).
    Left as they are: a fact without a source (written by a client), one found without a query (valued
    by confidence: no history was searched), one that replaced an earlier value (valued at least as its
    turns, settle_facts), and every fact when history offers no line."""
    lines = [item for item in episodes if item.type == "episode"]
    if not lines:
        return
    best: dict[int, float] = {}
    for line in lines:
        for source in line.sources:
            if line.value > best.get(source.episode_id, -1.0):
                best[source.episode_id] = line.value
    least = min(line.value for line in lines)
    for fact in facts:
        if not fact.sources or "vector" not in fact.score_parts or fact.score_parts.get("update"):
            continue
        found = [best[s.episode_id] for s in fact.sources if s.episode_id in best]
        fact.value = min(fact.value, max(found) if found else least)


def _lines_citing(episodes: Sequence[Candidate]) -> dict[int, list[Candidate]]:
    """History's lines (not its summaries) by the episodes they cite."""
    out: dict[int, list[Candidate]] = {}
    for line in episodes:
        if line.type == "episode":
            for source in line.sources:
                out.setdefault(source.episode_id, []).append(line)
    return out


def _restates(fact: Candidate) -> bool:
    """A fact that restates turns of history for the query: searched, with sources, not an update."""
    return bool(fact.sources) and "vector" in fact.score_parts and not fact.score_parts.get("update")


# A rendered line's own words: a fact's without its "(<day>, confidence <c>)", a line's without its
# "(earlier)" and speaker labels (router.rendering, core.lines.said_line).
_FACT_NOTE = re.compile(r"\s*\((?:[^()]*, )?confidence \d+(?:\.\d+)?\)\s*$")
_LINE_LABEL = re.compile(r"^\s*[^\s:]+(?: [^\s:]+)?: ")


def fact_defer(facts: Sequence[Candidate], episodes: Sequence[Candidate], *, query: str, own: dict[str, float]) -> None:
    """A fact says less than the line it came from: where the line answers the query better, by its
    value (`own`: each fact's value before fact_worth's bound) and by the query's words (the line holds
    content terms of the query, core.terms, that the fact's statement does not), the fact is worth no
    more per token than the line, so that the line is served while it fits and the fact only where it
    does not. A fact whose statement holds every query term its line holds, or that the query finds at
    least as relevant as the line, still stands in for it, shorter. On LoCoMo at 1K (reader on), of the
    questions whose answer episodic only held and all layers lost, a fact that stood in for its line
    (the words of the answer in the line only) was the cause in 16 of 38 (docs/router.md)."""
    wanted = frozenset(terms(query))
    if not wanted:
        return
    by_episode = _lines_citing(episodes)
    for fact in facts:
        if not _restates(fact):
            continue
        lines = [line for s in fact.sources for line in by_episode.get(s.episode_id, ())]
        if not lines:
            continue
        line = max(lines, key=lambda item: item.value)
        if own.get(fact.id, fact.value) >= line.value:
            continue
        asked_of_line = wanted.intersection(terms(_LINE_LABEL.sub("", line.text, count=1)))
        if asked_of_line <= wanted.intersection(terms(_FACT_NOTE.sub("", fact.text))):
            continue
        share = min(1.0, line_tokens(fact) / max(line_tokens(line), 1))
        fact.value = min(fact.value, line.value * share)


def fact_earlier(facts: Sequence[Candidate], episodes: Sequence[Candidate]) -> None:
    """A fact restating only lines labelled "(earlier)" (an older statement a newer line speaks of,
    router.candidates.episodic.label_updates) is the older statement too: it is served only with what
    those lines require (DESIGN invariant 8). Without it the fact, free of the requirement and shorter,
    was taken before the newer line and stood in for the older one, which would have come in with it: on
    LoCoMo at 1K (reader on), the cause in 21 of the 38 questions whose answer episodic only held and all
    layers lost (docs/router.md)."""
    by_episode = _lines_citing(episodes)
    for fact in facts:
        if not _restates(fact):
            continue
        lines = [line for s in fact.sources for line in by_episode.get(s.episode_id, ())]
        if lines and all(line.requires for line in lines):
            fact.requires = fact.requires.union(*(line.requires for line in lines))


def settle_facts(
    facts: Sequence[Candidate],
    episodes: Sequence[Candidate],
    *,
    cover: bool = True,
    bound: bool = True,
    query: str = "",
    defer: bool = True,
    earlier: bool = True,
) -> None:
    """A fact and a line of history it came from say the same thing: each covers the other, so that
    packing serves one of them, never both. The one worth more per token is taken first; where room is
    left at the end, the other replaces it when it is worth more (router.packing). Serving both spent
    the tokens of one for nothing: on LoCoMo at 1K, 35 of the 85 chosen facts that cited an evidence
    turn repeated a line chosen beside them. Without `cover` (router.parts, `fact_cover`), a fact and its
    lines cover nothing of each other: both may be served. With `bound` (router.parts, `fact_bound`),
    each fact is first worth no more than its turns' lines (fact_worth); with `defer` (`fact_defer`),
    no more per token than a line that answers the `query` better (fact_defer); with `earlier`
    (`fact_earlier`), a fact restating only older lines requires what they require (fact_earlier)."""
    own = {fact.id: fact.value for fact in facts}
    if bound:
        fact_worth(facts, episodes)
    if defer and query.strip():
        fact_defer(facts, episodes, query=query, own=own)
    by_id = {item.id: item for item in episodes}
    for fact in facts:
        if fact.score_parts.get("update"):
            # A fact that replaced an earlier value stands in for the turns that told it, at their worth:
            # the newer value is served first, as the fact (invariant 8), wherever its turn would be.
            lines = [by_id[s] for s in fact.covers if s in by_id]
            fact.value = max([fact.value, *(line.value for line in lines)])
        if not cover:
            fact.covers = frozenset()
        if fact.score_parts.get("update") or not cover:
            continue
        for source_id in sorted(fact.covers):
            line = by_id.get(source_id)
            if line is not None:
                line.covers = line.covers | {fact.id}
    if earlier:
        fact_earlier(facts, episodes)

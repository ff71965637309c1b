"""The episodic layer's candidates: the session's recent events, then a pool of passages found by
search, re-ranked (passage_relevance), with the passages beside the best hits, their sessions'
summaries, and the subject's latest events; settle_episodes decides which of them earn a place."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from core.lines import said_line
from core.rounding import rounded
from core.tokens import count_tokens
from episodic.aliases import Aliases
from episodic.models import SESSION_SUMMARY_EXTERNAL_ID
from episodic.selectors import (
    EpisodeRow,
    PassageRow,
    ScoredPassageRow,
    episode_rows_latest,
    passage_pool,
    passage_rows_neighbours,
    passage_similarities,
)
from router.candidates.common import (
    HeuristicWeights,
    clip,
    length_scaled,
    on_history_scale,
    query_words,
    summary_features,
)
from router.parts import ALL_PARTS, PackerParts
from router.pricing import said_tokens
from router.rendering import format_day
from router.rerank import bm25_from_counts, query_terms, term_counts
from router.timeframe import Timeframe
from router.types import BudgetPlan, Candidate, ContextRequest, Source
from tenants.models import Tenant

# The tokens of the list marker LINE_PREFIX are at most this many: a stored line this close to the limit
# has its text counted alone before it is clipped or not.
_MARKER_MARGIN = 8


# A ranked passage (the whole episode when it is one passage, else a part of it), with its score, its
# score parts and the query's terms counted in its stored index terms (router.rerank): the pool's rows
# as the selector builds them, not copied (a request ranks up to 400).
EpisodeHit = ScoredPassageRow


def episode_source(row: EpisodeRow, *, quoted: bool = True) -> Source:
    """Where a context line drawn from this episode (or this passage of it) comes from, with the span
    of the episode's content that the line serves (none when the line does not quote it)."""
    span: tuple[int, int] | None
    if not quoted:
        span = None
    elif isinstance(row, PassageRow):
        span = (row.char_start, row.char_end)
    else:
        span = (0, len(row.content))
    return Source(
        episode_id=row.id, external_id=row.external_id, occurred_at=row.occurred_at, session=row.session, span=span
    )


@dataclass(frozen=True)
class EpisodeHits:
    """The ranked pool, and the summaries of its sessions (session -> (summary, started_at))."""

    hits: list[EpisodeHit]
    summaries: dict[str, tuple[str, datetime]]


def episode_hits(
    *,
    tenant: Tenant,
    query: str,
    subject: str,
    until: datetime | None,
    limit: int,
    embedding: list[float] | Future[list[float]] | None,
    exclude_ids: Sequence[int],
    extracted: tuple[Sequence[str], Sequence[str]] | None = None,
    aliases: Aliases | None = None,
) -> EpisodeHits:
    """The episodic layer's ranked search over passages, with its sessions' summaries, in one statement
    (episodic.selectors.passage_pool); `exclude_ids` are episodes already offered; `extracted`: the
    query's entities and topics, when the caller has extracted them already."""

    # A session's summary episode is never offered (its summary is, as summary:<session>): left in the
    # search it would take places of the pool, set the scale of the pool's relevance and its session's
    # standing, and be an anchor.
    pool = passage_pool(
        tenant=tenant,
        query=query,
        subject=subject,
        until=until,
        limit=limit,
        query_embedding=embedding,
        exclude_episode_ids=list(exclude_ids),
        summaries=False,
        extracted=extracted,
        count_terms=query_terms(query),
        aliases=aliases,
    )
    return EpisodeHits(hits=pool.rows, summaries=pool.summaries)


def named_speakers(query: str, roles: Iterable[str]) -> frozenset[str]:
    """The speakers (episode roles, case-folded) that the query names as one of its words."""
    words = query_words(query)
    return frozenset(r for r in (role.casefold() for role in roles) if r and r in words)


def session_standing(scores: Iterable[tuple[str, float]], *, top: int) -> dict[str, float]:
    """Per session, the sum of its `top` best scores, relative to the best session's (0 to 1): a session
    with several matching lines stands above one with a single match of the same score."""
    by_session: dict[str, list[float]] = {}
    for session, score in scores:
        by_session.setdefault(session, []).append(score)
    sums = {s: sum(sorted(v, reverse=True)[:top]) for s, v in by_session.items()}
    best = max(sums.values(), default=0.0) or 1.0
    return {s: m / best for s, m in sums.items()}


def episode_above_floor(parts: dict[str, float], w: HeuristicWeights) -> bool:
    """An episode found by search clears the episodic layer's floor: a query word, entity or topic
    matches it (score parts `text`, `overlap`) or its vector is similar enough."""
    return (
        parts.get("text", 0.0) > 0.0
        or parts.get("overlap", 0.0) > 0.0
        or parts.get("vector", 0.0) > w.episode_min_similarity
    )


def is_search_hit(item: Candidate) -> bool:
    return item.type == "episode" and "fused" in item.score_parts


def is_session_summary_episode(item: Candidate) -> bool:
    return item.type == "episode" and any(s.external_id == SESSION_SUMMARY_EXTERNAL_ID for s in item.sources)


def settle_episodes(items: list[Candidate], w: HeuristicWeights) -> list[Candidate]:
    """The episodic candidates that earn a place, and which of them exclude each other.

    - A session's summary episode is not offered: it holds the text of the session's summary, which is
      offered as `summary:<session>` when the session has hits.
    - A search hit under the floor (episode_above_floor) is not offered, nor the passages offered beside
      it (score part `neighbour_of`, the passage id of the hit, score part `passage`).
    - A session's summary is a filler, served only where its session's turns are not: each of the
      session's turns covers it, and it covers none of them, so a summary never hides from the evidence
      the turns it stands for (it cites only one of them) and never rides beside them.
    The session's recent events are offered whatever their relevance."""
    dropped: set[float] = set()
    kept: list[Candidate] = []
    for item in items:
        if is_session_summary_episode(item) or (is_search_hit(item) and not episode_above_floor(item.score_parts, w)):
            if "passage" in item.score_parts:
                dropped.add(item.score_parts["passage"])
            continue
        kept.append(item)
    kept = [item for item in kept if item.score_parts.get("neighbour_of", -1.0) not in dropped]
    turns: dict[str, list[Candidate]] = {}
    for item in kept:
        if item.type == "episode" and item.sources and item.sources[0].session:
            turns.setdefault(item.sources[0].session, []).append(item)
    for item in kept:
        if item.type != "session_summary":
            continue
        item.filler = True
        for turn in turns.get(item.id.split(":", 1)[1], []):
            turn.covers = turn.covers | {item.id}
    return kept


def episode_candidate(
    row: EpisodeRow,
    *,
    w: HeuristicWeights,
    section: str,
    value: float,
    score: float,
    parts: dict[str, float],
    newest_day_first: bool = True,
) -> Candidate:
    """A line for an episode, or for a passage of a long one: an excerpt marked with "…" where the
    episode's content goes on before or after it, sourced with its span. History is rendered newest
    day first (within a day in time order, sessions kept together), so that what was said last about
    anything comes before what it updates; the session's recent activity reads as a transcript."""
    excerpt = isinstance(row, PassageRow) and not row.whole
    if isinstance(row, PassageRow) and row.line:
        text, line_count = stored_line(row, w)
    else:
        text, line_count = episode_line(row, w)
    position = row.position if isinstance(row, PassageRow) else 0
    day = row.occurred_at.date().toordinal()
    item_id = f"passage:{row.passage_id}" if isinstance(row, PassageRow) and excerpt else f"episode:{row.id}"
    return length_scaled(
        Candidate(
            id=item_id,
            type="episode",
            layer="episodic",
            section=section,
            text=text,
            line_tokens=line_count,
            value=value,
            score=score,
            score_parts=parts,
            sources=[episode_source(row)],
            occurred_at=row.occurred_at,
            group=row.occurred_at.date().isoformat(),
            group_header=format_day(row.occurred_at),
            order=(
                -day if newest_day_first else day,
                row.session,
                row.occurred_at,
                row.id,
                position,
            ),
        ),
        w,
    )


def stored_line(row: PassageRow, w: HeuristicWeights) -> tuple[str, int]:
    """A passage's line and its tokens as stored when it was written (episodic.passages.passage_line),
    clipped to episode_max_tokens (its text, without the list marker, is counted only near the limit)."""
    if row.line_tokens + _MARKER_MARGIN > w.episode_max_tokens and count_tokens(row.line) > w.episode_max_tokens:
        return clip(row.line, w.episode_max_tokens), -1
    return row.line, row.line_tokens


def episode_line(row: EpisodeRow, w: HeuristicWeights) -> tuple[str, int]:
    """An episode's line (or a passage's not stored yet) and its tokens (-1: to be counted)."""
    speaker = row.role or row.kind
    excerpt = isinstance(row, PassageRow) and not row.whole
    opens = not (isinstance(row, PassageRow) and excerpt and row.char_start > 0)
    closes = not (isinstance(row, PassageRow) and excerpt and not row.last)
    text = said_line(speaker, row.content, opens=opens, closes=closes)
    raw = f"{speaker}: {row.content}" if speaker else row.content
    # Stored content that needs no normalising is priced from its stored count; other lines are counted
    # (an excerpt is at most a passage long).
    counts = said_tokens(speaker, row.content, row.token_count) if text == raw and not excerpt else None
    if counts is None or counts[0] > w.episode_max_tokens:
        return clip(text, w.episode_max_tokens), -1
    return text, counts[1]


def episode_candidates(
    *,
    tenant: Tenant,
    request: ContextRequest,
    plan: BudgetPlan,
    embedding: list[float] | Future[list[float]] | None,
    recent: Sequence[EpisodeRow],
    frame: Timeframe | None,
    w: HeuristicWeights,
    extracted: tuple[Sequence[str], Sequence[str]] | None = None,
    parts: PackerParts = ALL_PARTS,
    aliases: Aliases | None = None,
) -> list[Candidate]:
    """The session's recent events, the passages search finds with their relevance as value, and, as
    `parts` (router.parts) has them, the turns beside the best hits, the labels of earlier statements,
    the summaries of the sessions hit and the subject's latest events."""
    out: list[Candidate] = []
    recent_ids: set[int] = set()
    seen_passages: set[int] = set()
    seen_hashes: set[str] = set()
    for index, row in enumerate(recent):
        recent_ids.add(row.id)
        if row.content_hash in seen_hashes:
            continue
        seen_hashes.add(row.content_hash)
        # The caller's own transcript: already in its prompt, and kept out of the search below.
        rank = index - request.transcript_turns
        if rank < 0:
            continue
        out.append(_activity(row, w=w, value=w.recent_base * w.recent_decay**rank, parts={"recency_rank": float(rank)}))
    if not request.query.strip():
        return out + latest_candidates(tenant=tenant, request=request, seen_hashes=seen_hashes, w=w, parts=parts)
    # The search's depth follows what the context may hold, whichever layers are asked for: history may
    # take all of it (what the other layers leave rolls over), and an episodic-only context searches as
    # deep as a full one.
    limit = max(w.min_candidates, min(w.max_candidates, plan.memory // w.tokens_per_candidate))
    found = episode_hits(
        tenant=tenant,
        query=request.query,
        subject=request.subject,
        until=request.as_of,
        limit=limit,
        embedding=embedding,
        exclude_ids=sorted(recent_ids),
        extracted=extracted,
        aliases=aliases,
    )
    hits = found.hits
    if not hits:
        return out + latest_candidates(tenant=tenant, request=request, seen_hashes=seen_hashes, w=w, parts=parts)
    relevance = passage_relevance(request.query, hits, w=w, frame=frame)
    anchors = sorted(hits, key=lambda h: (-relevance[h.row.passage_id], h.row.passage_id))[: w.neighbour_hits]
    neighbours = (
        passage_rows_neighbours(tenant=tenant, passage_ids=[h.row.passage_id for h in anchors], until=request.as_of)
        if parts.neighbours
        else []
    )
    answers: list[tuple[float, PassageRow, Candidate]] = []
    shown = rounded([relevance[hit.row.passage_id] for hit in hits], 6)
    for hit, rel_shown in zip(hits, shown, strict=True):
        row = hit.row
        if row.passage_id in seen_passages or row.content_hash in seen_hashes:
            continue
        seen_passages.add(row.passage_id)
        seen_hashes.add(row.content_hash)
        rel = relevance[row.passage_id]
        item = episode_candidate(
            row,
            w=w,
            section="Relevant history",
            value=rel**w.sharpness + 1e-6,
            score=hit.score,
            parts={**hit.score_parts, "relevance": rel_shown, "passage": float(row.passage_id)},
        )
        out.append(item)
        if rel >= w.update_relevance:
            answers.append((rel, row, item))
    if parts.earlier:
        label_updates(tenant=tenant, answers=answers, w=w)
    for anchor_id, row in neighbours:
        if row.id in recent_ids or row.passage_id in seen_passages or row.content_hash in seen_hashes:
            continue
        seen_passages.add(row.passage_id)
        seen_hashes.add(row.content_hash)
        rel = relevance.get(anchor_id, 0.0) * w.neighbour_factor
        out.append(
            episode_candidate(
                row,
                w=w,
                section="Relevant history",
                value=rel**w.sharpness + 1e-6,
                score=rel,
                parts={"neighbour_of": float(anchor_id), "relevance": rel},
            )
        )
    if parts.summaries:
        out.extend(summary_candidates(request=request, hits=hits, summaries=found.summaries, relevance=relevance, w=w))
    out.extend(latest_candidates(tenant=tenant, request=request, seen_hashes=seen_hashes, w=w, parts=parts))
    return out


def _activity(row: EpisodeRow, *, w: HeuristicWeights, value: float, parts: dict[str, float]) -> Candidate:
    """A recent event of the session or the subject: its value is its score, ranked by recency alone."""
    return episode_candidate(
        row, w=w, section="Recent activity", value=value, score=value, parts=parts, newest_day_first=False
    )


def latest_candidates(
    *,
    tenant: Tenant,
    request: ContextRequest,
    seen_hashes: set[str],
    w: HeuristicWeights,
    parts: PackerParts = ALL_PARTS,
) -> list[Candidate]:
    if request.session or w.latest_limit <= 0 or not parts.latest:
        return []
    rows = episode_rows_latest(tenant=tenant, subject=request.subject, until=request.as_of, limit=w.latest_limit)
    out = []
    for rank, row in enumerate(rows):
        if row.content_hash in seen_hashes:
            continue
        seen_hashes.add(row.content_hash)
        out.append(_activity(row, w=w, value=w.latest_value * w.recent_decay**rank, parts={"latest_rank": float(rank)}))
    return out


def label_updates(
    *, tenant: Tenant, answers: Sequence[tuple[float, PassageRow, Candidate]], w: HeuristicWeights
) -> None:
    """Of the lines that answer the query, label each older one that a newer one speaks of the same
    thing as (close in meaning) "(earlier)", and make it require the newer line closest to it: a
    stale statement never reaches the context without its update, and comes after it."""
    pool = sorted(answers, key=lambda a: (-a[0], a[1].passage_id))[: w.update_pool]
    if len(pool) < 2:
        return
    similarity = passage_similarities(tenant=tenant, passage_ids=[row.passage_id for _, row, _ in pool])
    for _, older, item in pool:
        newer = [
            (similarity.get((min(a, b), max(a, b)), 0.0), row.passage_id, other)
            for _, row, other in pool
            if row.occurred_at > older.occurred_at and row.id != older.id
            for a, b in [(row.passage_id, older.passage_id)]
        ]
        close = [n for n in newer if n[0] >= w.update_similarity]
        if not close:
            continue
        sim, _, update = max(close, key=lambda n: (n[0], -n[1]))
        item.text = f"(earlier) {item.text}"
        item.line_tokens = -1
        item.requires = item.requires | {update.id}
        item.score_parts["earlier_than"] = float(update.sources[0].episode_id)
        item.score_parts["update_similarity"] = round(sim, 6)


def passage_relevance(
    query: str, hits: Sequence[EpisodeHit], *, w: HeuristicWeights, frame: Timeframe | None = None
) -> dict[int, float]:
    """Each hit's relevance in [0, 1], by passage id. BM25 over the pool (router.rerank) relative to
    the best, plus the vector similarity scaled to the pool's range, weighted; then scaled down for
    lines by other speakers than the one the query names, and by the standing of the line's
    session. Reciprocal rank fusion orders the pool well enough to gather it, but flattens the
    scores, and ts_rank weighs every word alike; packing by value per token needs values that fall
    as fast as relevance does."""
    if not hits:
        return {}
    lexical = lexical_scores(query, hits)
    best_lexical = max(lexical) or 1.0
    vectors = [h.score_parts.get("vector", 0.0) for h in hits]
    low, high = min(vectors), max(vectors)
    named = named_speakers(query, (h.row.role for h in hits))
    raw: dict[int, float] = {}
    for h, lex, vec in zip(hits, lexical, vectors, strict=True):
        value = w.fusion_lexical * lex / best_lexical + w.fusion_vector * (
            (vec - low) / (high - low) if high > low else 0.0
        )
        if named and h.row.role.casefold() not in named:
            value *= w.other_speaker_factor
        # The fused rank breaks ties between hits with the same parts.
        raw[h.row.passage_id] = max(value, 0.0) + 1e-4 * h.score
    # A time the query names: history outside it yields to history inside it, when there is some
    # (before the sessions' standing, so that the sessions of that time stand higher).
    if frame is not None and any(frame.contains(h.row.occurred_at) for h in hits):
        for h in hits:
            if not frame.contains(h.row.occurred_at):
                raw[h.row.passage_id] *= w.time_outside_factor
    standing = session_standing(
        ((h.row.session or f"#{h.row.id}", raw[h.row.passage_id]) for h in hits), top=w.session_top
    )
    for h in hits:
        share = standing[h.row.session or f"#{h.row.id}"]
        raw[h.row.passage_id] *= 1.0 - w.session_weight + w.session_weight * share
    top = max(raw.values()) or 1.0
    return {passage_id: value / top for passage_id, value in raw.items()}


def lexical_scores(query: str, hits: Sequence[EpisodeHit]) -> list[float]:
    """BM25 of each hit's speaker and text over the pool (router.rerank), from the term counts the search
    read with it; a hit without them (a passage written before they were stored) is tokenised here."""
    q = query_terms(query)
    if not q:
        return [0.0] * len(hits)
    counts: list[list[int]] = []
    lengths: list[int] = []
    for h in hits:
        if h.term_counts is not None and h.terms_length is not None and len(h.term_counts) == len(q):
            counts.append(h.term_counts)
            lengths.append(h.terms_length)
        else:
            c, length = term_counts(q, f"{h.row.role} {h.row.content}")
            counts.append(c)
            lengths.append(length)
    matrix = np.array(counts, dtype=np.int64).reshape(len(hits), len(q))
    return [float(x) for x in bm25_from_counts(matrix, np.array(lengths, dtype=np.int64))]


def summary_candidates(
    *,
    request: ContextRequest,
    hits: Sequence[EpisodeHit],
    summaries: dict[str, tuple[str, datetime]],
    relevance: dict[int, float],
    w: HeuristicWeights,
) -> list[Candidate]:
    best: dict[str, float] = {}
    first_hit: dict[str, EpisodeRow] = {}
    for hit in hits:
        session = hit.row.session
        if session and session != request.session and episode_above_floor(hit.score_parts, w):
            best[session] = max(best.get(session, 0.0), relevance[hit.row.passage_id])
            first_hit.setdefault(session, hit.row)
    out = []
    for session in sorted(best):
        if session not in summaries:
            continue
        summary, started_at = summaries[session]
        parts = {"session_relevance": best[session]}
        rel = best[session] * w.summary_factor
        moment: datetime = started_at
        out.append(
            length_scaled(
                Candidate(
                    id=f"summary:{session}",
                    type="session_summary",
                    layer="episodic",
                    section="Relevant history",
                    text=clip(f"summary: {' '.join(summary.split())}", w.episode_max_tokens),
                    value=on_history_scale(w.summary_logit, summary_features(parts), w),
                    score=rel,
                    score_parts=parts,
                    sources=[episode_source(first_hit[session], quoted=False)],
                    occurred_at=moment,
                    group=moment.date().isoformat(),
                    group_header=format_day(moment),
                    # Before the session's own lines in its block.
                    order=(-moment.date().toordinal(), session, moment, -1, 0),
                ),
                w,
            )
        )
    return out

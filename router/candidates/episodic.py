"""The episodic layer's candidates: the session's recent events, then a pool of passages found by
search, re-ranked (passage_relevance), with the passages beside the best hits, their sessions'
summaries, and the subject's latest events; settle_episodes decides which of them earn a place."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from datetime import datetime, timedelta

import numpy as np

from core.lines import said_line
from core.rounding import rounded
from core.timestamps import EPOCH
from core.tokens import count_tokens
from episodic.aliases import Aliases
from episodic.models import SESSION_SUMMARY_EXTERNAL_ID
from episodic.selectors import (
    EpisodeRow,
    PassageColumns,
    PassageRow,
    ScoredPassageRow,
    episode_rows_latest,
    passage_pool_columns,
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
    sentences: bool = False,
) -> PassageColumns:
    """The episodic layer's ranked search over passages, with its sessions' summaries, in one statement,
    as columns (episodic.selectors.passage_pool_columns); `exclude_ids` are episodes already offered;
    `extracted`: the query's entities and topics, when the caller has extracted them already. A
    passage's content comes back only where its line or its term counts are not stored (`stored_lines`):
    a candidate is made from the stored line (_HitCandidates), and relevance from the term counts.
    `sentences`: each passage's best sentence cosine too (the score part `sentence`), for a tenant that
    learns its value (router.value.reads_sentences)."""

    # A session's summary episode is never offered (its summary is, as summary:<session>): left in the
    # search it would take places of the pool, set the scale of the pool's relevance and its session's
    # standing, and be an anchor.
    return passage_pool_columns(
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
        stored_lines=True,
        sentences=sentences,
    )


def named_speakers(query: str, roles: Iterable[str]) -> frozenset[str]:
    """The speakers (episode roles, case-folded) that the query names as one of its words."""
    words = query_words(query)
    return frozenset(r for r in {role.casefold() for role in set(roles)} if r and r in words)


def session_standing(scores: Iterable[tuple[str, float]], *, top: int) -> dict[str, float]:
    """Per session, the sum of its `top` best scores, relative to the best session's (0 to 1): a session
    with several matching lines stands above one with a single match of the same score."""
    by_session: dict[str, list[float]] = {}
    for session, score in scores:
        by_session.setdefault(session, []).append(score)
    sums = {s: sum(sorted(v, reverse=True)[:top]) for s, v in by_session.items()}
    best = max(sums.values(), default=0.0) or 1.0
    return {s: m / best for s, m in sums.items()}


def beside_relevance(
    passage_ids: Sequence[int] | np.ndarray, sessions: Sequence[str], relevance: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each hit of the pool, where it sits (score parts a learned value reads, issue 41): the best
    relevance of a hit that is the passage before or after it in its session (`beside`), and the best
    relevance of another hit of its session (`session_best`), 0 where there is none. Passage ids follow
    the order of writing and a session's passages are written in its order, so the id next to a
    passage's, in its session, is the turn (or part of a turn) beside it; where another session wrote in
    between, no hit is beside it. One pass of sorts and searches over the pool, no loop over its items."""
    n = len(relevance)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    ids = np.asarray(passage_ids, dtype=np.int64)
    rel = np.asarray(relevance, dtype=np.float64)
    code = np.unique(np.asarray(sessions, dtype=str), return_inverse=True)[1].reshape(-1)
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    beside = np.zeros(n)
    for step in (-1, 1):
        at = np.minimum(np.searchsorted(ordered, ids + step), n - 1)
        other = order[at]
        found = (ordered[at] == ids + step) & (code[other] == code)
        beside = np.where(found, np.maximum(beside, rel[other]), beside)
    # Each session's best and second best: a hit's session_best is its session's best, or the second where
    # it is the best itself.
    by_session = np.lexsort((-rel, code))
    grouped = code[by_session]
    first = np.ones(n, dtype=bool)
    first[1:] = grouped[1:] != grouped[:-1]
    second = np.zeros(n, dtype=bool)
    second[1:] = first[:-1] & ~first[1:]
    top = np.zeros(int(code.max()) + 1)
    runner_up = np.zeros_like(top)
    top[grouped[first]] = rel[by_session][first]
    runner_up[grouped[second]] = rel[by_session][second]
    is_top = np.zeros(n, dtype=bool)
    is_top[by_session[first]] = True
    return beside, np.where(is_top, runner_up[code], top[code])


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
    return item.type == "episode" and _summary_episode(item.sources)


def _summary_episode(sources: Sequence[Source]) -> bool:
    for source in sources:
        if source.external_id == SESSION_SUMMARY_EXTERNAL_ID:
            return True
    return False


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
        parts = item.score_parts
        if item.type == "episode" and (
            _summary_episode(item.sources) or ("fused" in parts and not episode_above_floor(parts, w))
        ):
            if "passage" in parts:
                dropped.add(parts["passage"])
            continue
        kept.append(item)
    if dropped:
        kept = [item for item in kept if item.score_parts.get("neighbour_of", -1.0) not in dropped]
    summaries = [item for item in kept if item.type == "session_summary"]
    if not summaries:
        return kept
    turns: dict[str, list[Candidate]] = {}
    for item in kept:
        if item.type == "episode" and item.sources and item.sources[0].session:
            turns.setdefault(item.sources[0].session, []).append(item)
    for item in summaries:
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
    sentences: bool = False,
    beside: bool = False,
) -> list[Candidate]:
    """The session's recent events, the passages search finds with their relevance as value, and, as
    `parts` (router.parts) has them, the turns beside the best hits, the labels of earlier statements,
    the summaries of the sessions hit and the subject's latest events. `beside`: each hit's and each
    turn beside a hit's score parts `beside` and `session_best` (beside_relevance), for a tenant that
    learns its value (router.value.reads_beside)."""
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
        sentences=sentences,
    )
    if not len(found):
        return out + latest_candidates(tenant=tenant, request=request, seen_hashes=seen_hashes, w=w, parts=parts)
    relevance = pool_relevance(request.query, found, w=w, frame=frame)
    passage_ids = np.asarray(found.passage_id, dtype=np.int64)
    anchor_ids = passage_ids[np.lexsort((passage_ids, -relevance))[: w.neighbour_hits]].tolist()
    # A neighbour the pool holds is passed over below (its passage, or its content, is seen by then):
    # it is not read.
    neighbours = (
        passage_rows_neighbours(tenant=tenant, passage_ids=anchor_ids, until=request.as_of, known=found.passage_id)
        if parts.neighbours
        else []
    )
    shown_from = relevance.tolist()
    by_passage = dict(zip(found.passage_id, shown_from, strict=True))
    answers: list[tuple[float, PassageRow, Candidate]] = []
    hits = _HitCandidates(found, w)
    where: tuple[list[float], list[float]] | None = None
    session_top: dict[str, float] = {}
    if beside:
        near, in_session = beside_relevance(passage_ids, found.session, relevance)
        where = (rounded(near, 6), rounded(in_session, 6))
        for session, rel in zip(found.session, shown_from, strict=True):
            session_top[session] = max(session_top.get(session, 0.0), rel)
    for i, (rel, rel_shown) in enumerate(zip(shown_from, rounded(relevance, 6), strict=True)):
        passage_id, content_hash = found.passage_id[i], found.content_hash[i]
        if passage_id in seen_passages or content_hash in seen_hashes:
            continue
        seen_passages.add(passage_id)
        seen_hashes.add(content_hash)
        item = hits.candidate(i, value=rel**w.sharpness + 1e-6, relevance=rel_shown)
        if where is not None:
            item.score_parts["beside"], item.score_parts["session_best"] = where[0][i], where[1][i]
        out.append(item)
        if rel >= w.update_relevance:
            answers.append((rel, found.row(i), item))
    if parts.earlier:
        label_updates(tenant=tenant, answers=answers, w=w)
    for anchor_id, row in neighbours:
        if row.id in recent_ids or row.passage_id in seen_passages or row.content_hash in seen_hashes:
            continue
        seen_passages.add(row.passage_id)
        seen_hashes.add(row.content_hash)
        rel = by_passage.get(anchor_id, 0.0) * w.neighbour_factor
        parts_of = {"neighbour_of": float(anchor_id), "relevance": rel}
        if where is not None:
            # A turn beside a hit: the hit is beside it, and every hit of the pool in its session is another.
            parts_of["beside"] = round(by_passage.get(anchor_id, 0.0), 6)
            parts_of["session_best"] = round(session_top.get(row.session, 0.0), 6)
        out.append(
            episode_candidate(
                row,
                w=w,
                section="Relevant history",
                value=rel**w.sharpness + 1e-6,
                score=rel,
                parts=parts_of,
            )
        )
    if parts.summaries:
        out.extend(summary_candidates(request=request, pool=found, relevance=shown_from, w=w))
    out.extend(latest_candidates(tenant=tenant, request=request, seen_hashes=seen_hashes, w=w, parts=parts))
    return out


# date(1970, 1, 1).toordinal(): a UTC day's ordinal from its microseconds since the epoch.
_EPOCH_ORDINAL = 719_163
_DAY_US = 86_400_000_000


class _HitCandidates:
    """The candidates of the pool's rows (episode_candidate for a PassageRow), made from its columns
    without a row object, with the fields of a day computed once per day."""

    def __init__(self, pool: PassageColumns, w: HeuristicWeights) -> None:
        self.pool = pool
        self.w = w
        self.days: dict[int, tuple[int, str, str]] = {}

    def candidate(self, i: int, *, value: float, relevance: float) -> Candidate:
        pool, w = self.pool, self.w
        line = pool.line[i]
        if not line:
            row = pool.row(i)
            return episode_candidate(
                row,
                w=w,
                section="Relevant history",
                value=value,
                score=pool.score[i],
                parts={**pool.score_parts(i), "relevance": relevance, "passage": float(row.passage_id)},
            )
        passage_id, episode_id, session = pool.passage_id[i], pool.episode_id[i], pool.session[i]
        moment = pool.occurred_at[i]
        line_tokens = pool.line_tokens[i]
        if line_tokens + _MARKER_MARGIN > w.episode_max_tokens and count_tokens(line) > w.episode_max_tokens:
            line, line_tokens = clip(line, w.episode_max_tokens), -1
        excerpt = not (pool.position[i] == 0 and pool.last[i])
        day = pool.occurred_us[i] // _DAY_US
        fields = self.days.get(day)
        if fields is None:
            fields = self.days[day] = (day + _EPOCH_ORDINAL, moment.date().isoformat(), format_day(moment))
        ordinal, group, header = fields
        if line_tokens >= 0:
            # length_scaled, without its call: the factor of the line's known tokens.
            value *= (line_tokens / w.length_reference) ** w.length_exponent
        parts = {
            "text": pool.text[i],
            "vector": pool.vector[i],
            "overlap": pool.overlap[i],
            "fused": pool.fused[i],
            "relevance": relevance,
            "passage": float(passage_id),
        }
        if pool.sentence is not None:
            parts["sentence"] = pool.sentence[i]
        item = Candidate(
            id=f"passage:{passage_id}" if excerpt else f"episode:{episode_id}",
            type="episode",
            layer="episodic",
            section="Relevant history",
            text=line,
            line_tokens=line_tokens,
            value=value,
            score=pool.score[i],
            score_parts=parts,
            sources=[
                Source(
                    episode_id=episode_id,
                    external_id=pool.external_id[i],
                    occurred_at=moment,
                    session=session,
                    span=(pool.char_start[i], pool.char_end[i]),
                )
            ],
            occurred_at=moment,
            group=group,
            group_header=header,
            order=(-ordinal, session, moment, episode_id, pool.position[i]),
        )
        return item if line_tokens >= 0 else length_scaled(item, w)


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
    """pool_relevance of hits read as rows, by passage id."""
    relevance = pool_relevance(query, PassageColumns.of_rows(hits), w=w, frame=frame)
    return dict(zip((h.row.passage_id for h in hits), relevance.tolist(), strict=True))


def pool_relevance(
    query: str, pool: PassageColumns, *, w: HeuristicWeights, frame: Timeframe | None = None
) -> np.ndarray:
    """Each hit's relevance in [0, 1], in the pool's order. BM25 over the pool (router.rerank) relative
    to the best, plus the vector similarity scaled to the pool's range, weighted; then scaled down for
    lines by other speakers than the one the query names, and by the standing of the line's session
    (session_standing). Reciprocal rank fusion orders the pool well enough to gather it, but flattens
    the scores, and ts_rank weighs every word alike; packing by value per token needs values that fall
    as fast as relevance does. Array operations in the order of the arithmetic of one hit at a time,
    so the same to the bit (tests/router/test_policy.py)."""
    n = len(pool)
    if not n:
        return np.zeros(0)
    lexical = lexical_scores(query, pool)
    best_lexical = float(lexical.max()) or 1.0
    vectors = np.asarray(pool.vector, dtype=np.float64)
    low, high = float(vectors.min()), float(vectors.max())
    raw = w.fusion_lexical * lexical / best_lexical + w.fusion_vector * (
        (vectors - low) / (high - low) if high > low else 0.0
    )
    named = named_speakers(query, pool.role)
    if named:
        other = {role: role.casefold() not in named for role in set(pool.role)}
        others = np.array([other[role] for role in pool.role], dtype=bool)
        raw = np.where(others, raw * w.other_speaker_factor, raw)
    # The fused rank breaks ties between hits with the same parts.
    raw = np.maximum(raw, 0.0) + 1e-4 * np.asarray(pool.score, dtype=np.float64)
    # A time the query names: history outside it yields to history inside it, when there is some
    # (before the sessions' standing, so that the sessions of that time stand higher).
    if frame is not None:
        moments = np.asarray(pool.occurred_us, dtype=np.int64)
        inside = np.ones(n, dtype=bool)
        if frame.start is not None:
            inside &= moments >= (frame.start - EPOCH) // _MICROSECOND
        if frame.end is not None:
            inside &= moments < (frame.end - EPOCH) // _MICROSECOND
        if inside.any():
            raw = np.where(inside, raw, raw * w.time_outside_factor)
    keys = [session or f"#{episode_id}" for session, episode_id in zip(pool.session, pool.episode_id, strict=True)]
    share = standing_shares(keys, raw, top=w.session_top)
    raw = raw * (1.0 - w.session_weight + w.session_weight * share)
    top = float(raw.max()) or 1.0
    return raw / top


_MICROSECOND = timedelta(microseconds=1)


def standing_shares(keys: Sequence[str], scores: np.ndarray, *, top: int) -> np.ndarray:
    """session_standing of each score's session, in the scores' order: per session the sum of its
    `top` best scores, added from the best down as sum() adds them, relative to the best session's."""
    index: dict[str, int] = {}
    codes = np.array([index.setdefault(k, len(index)) for k in keys], dtype=np.int64)
    order = np.lexsort((-scores, codes))
    ordered_codes = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered_codes[1:] != ordered_codes[:-1]])
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)]))
    sums = np.zeros(len(index))
    ordered = scores[order]
    for k in range(top):
        at = rank == k
        sums[ordered_codes[at]] += ordered[at]
    best = (float(sums.max()) if len(sums) else 0.0) or 1.0
    return (sums / best)[codes]


def lexical_scores(query: str, pool: PassageColumns) -> np.ndarray:
    """BM25 of each hit's speaker and text over the pool (router.rerank), from the term counts the search
    read with it; a hit without them (a passage written before they were stored) is tokenised here."""
    q = query_terms(query)
    n = len(pool)
    if not q:
        return np.zeros(n)
    counts = pool.term_counts
    if None not in counts and {len(c) for c in counts if c is not None} == {len(q)}:
        matrix = np.array(counts, dtype=np.int64).reshape(n, len(q))
        lengths = np.array(pool.terms_length, dtype=np.int64)
    else:
        rows: list[list[int]] = []
        sizes: list[int] = []
        for c, length, role, content in zip(counts, pool.terms_length, pool.role, pool.content, strict=True):
            if c is not None and length is not None and len(c) == len(q):
                rows.append(c)
                sizes.append(length)
            else:
                c, length = term_counts(q, f"{role} {content}")
                rows.append(c)
                sizes.append(length)
        matrix = np.array(rows, dtype=np.int64).reshape(n, len(q))
        lengths = np.array(sizes, dtype=np.int64)
    return bm25_from_counts(matrix, lengths)


def summary_candidates(
    *,
    request: ContextRequest,
    pool: PassageColumns,
    relevance: Sequence[float],
    w: HeuristicWeights,
) -> list[Candidate]:
    """The summaries of the sessions of the pool's hits above the floor, other than the request's own,
    valued by the session's best hit."""
    summaries, own, sessions = pool.summaries, request.session, pool.session
    if not summaries:
        return []
    best: dict[str, float] = {}
    first_hit: dict[str, int] = {}
    for i in np.flatnonzero(_above_floor(pool, w)).tolist():
        session = sessions[i]
        if session and session != own and session in summaries:
            rel = relevance[i]
            if session in best:
                best[session] = max(best[session], rel)
            else:
                best[session] = max(0.0, rel)
                first_hit[session] = i
    out = []
    for session in sorted(best):
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
                    sources=[episode_source(pool.row(first_hit[session]), quoted=False)],
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


def _above_floor(pool: PassageColumns, w: HeuristicWeights) -> np.ndarray:
    """episode_above_floor of each hit of the pool."""
    return (
        (np.asarray(pool.text, dtype=np.float64) > 0.0)
        | (np.asarray(pool.overlap, dtype=np.float64) > 0.0)
        | (np.asarray(pool.vector, dtype=np.float64) > w.episode_min_similarity)
    )

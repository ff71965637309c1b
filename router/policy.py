"""What to load into a context: the pluggable policy, and the default heuristic one.

A policy turns a request into candidate items per layer, each with a value; packing and rendering
(router.packing, router.rendering) are shared, so every policy gets the same budget guarantees. The
class named in settings.ENGRAM["CONTEXT_POLICY"] is the extension point for a learned memory policy:
the traces it is trained on come from `manage.py export_traces`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Protocol

from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string

from core.embedding import embed_in_background
from core.tokens import count_tokens, truncate_to_tokens
from episodic.extraction import extract_entities_topics
from episodic.models import SESSION_SUMMARY_EXTERNAL_ID
from episodic.scratchpad import scratchpad_get
from procedural.selectors import procedure_match
from router import selectors as router_selectors
from router.packing import line_tokens, said_tokens
from router.rendering import format_day
from router.rerank import bm25_scores
from router.timeframe import Timeframe, query_window
from router.types import BudgetPlan, Candidate, ContextRequest, LayerCandidates
from semantic.models import FactOrigin
from semantic.selectors import fact_search_rows, facts_for_subject
from semantic.validation import fact_value_is_fragment
from tenants.models import Tenant
from tenants.readers import read_beside


class ContextPolicy(Protocol):
    name: str

    def offer(self, *, tenant: Tenant, request: ContextRequest, plan: BudgetPlan) -> LayerCandidates:
        """Candidate items per layer, with values; packing chooses among them."""
        ...


@lru_cache(maxsize=4)
def _policy_class(path: str) -> type[ContextPolicy]:
    cls: type[ContextPolicy] = import_string(path)
    return cls


def get_policy() -> ContextPolicy:
    return _policy_class(settings.ENGRAM["CONTEXT_POLICY"])()


# No cl100k token is longer than this many characters in ordinary text; a clip reads at most this many
# characters per token of its limit, so its cost does not grow with the length of what is clipped.
_CHARS_PER_TOKEN_BOUND = 16


def _clip(text: str, limit: int) -> str:
    # A token is at least one character, so a text no longer than the limit in characters fits.
    if len(text) <= limit:
        return text
    head = text[: limit * _CHARS_PER_TOKEN_BOUND]
    if len(head) == len(text) and count_tokens(text) <= limit:
        return text
    return truncate_to_tokens(head, limit - 1) + "…"


@dataclass(frozen=True)
class HeuristicWeights:
    # Longest single line an episode may take; longer content is cut (the full text is in the store).
    episode_max_tokens: int = 300
    fact_max_tokens: int = 120
    # How many recent events of the current session (or the subject) are offered.
    recent_limit: int = 40
    # Values are relevance raised to `sharpness`, so that per-token packing still prefers the most
    # relevant lines over short, weakly related ones.
    sharpness: float = 4.0
    fusion_lexical: float = 0.6
    fusion_vector: float = 0.4
    recent_base: float = 1.2
    recent_decay: float = 0.85
    # When the request names no session, the subject's latest events in any session are offered too,
    # valued below any relevant line: they fill only what relevant history leaves (a memory written a
    # moment ago is there even before anything finds it by its words or meaning). Valued at 0.05 they
    # cost long-turn LoCoMo 0.038 recall_all at 4K on conversations 5-9: five long turns crowd out hits.
    latest_limit: int = 5
    latest_value: float = 1e-5
    neighbour_factor: float = 0.35
    neighbour_hits: int = 40
    summary_factor: float = 0.6
    # When the query names who said something (an episode's role, as a word of the query), lines of
    # other speakers keep this share of their relevance: "What has Maria been to?" is answered by Maria.
    # Not lower: a question with a wrong premise ("What did Maria do?" when John did it) needs John's line.
    other_speaker_factor: float = 0.5
    # A session is judged by its best `session_top` hits; a line's relevance is scaled between
    # (1 - session_weight) and 1 by its session's standing, so that the lines of the sessions about the
    # topic beat stray matches elsewhere (multi-hop answers sit in the same few sessions).
    session_weight: float = 0.5
    session_top: int = 3
    # Packing divides value by tokens; scaling an episode's value by tokens ** length_exponent softens
    # that, so a long line that says more is not always passed over for a short one that says little.
    length_exponent: float = 0.6
    length_reference: int = 32
    # Knowledge updates: among the `update_pool` hits of at least `update_relevance` (the lines that
    # answer the query), an older one whose meaning is within `update_similarity` (cosine) of a newer
    # one speaks of the same thing: it is labelled "(earlier)" and is served only with the newer.
    update_relevance: float = 0.5
    update_similarity: float = 0.3
    update_pool: int = 8
    # A time phrase in the query ("last week", "in May 2023"; router.timeframe): history outside the
    # window it names keeps this share of its relevance, when some of the pool is inside it.
    time_outside_factor: float = 0.5
    # Search depth: about one candidate per this many tokens of episodic budget, within bounds.
    tokens_per_candidate: int = 12
    min_candidates: int = 30
    max_candidates: int = 400
    # Absolute relevance floors: an item under its layer's floor is not offered, however it ranks among
    # the others, so a context is shorter than its budget when little is relevant. They are read on
    # scales that mean the same for every query: the cosine similarity of the query's and the item's
    # vectors, and whether a word of the query matches the item at all (its text part, or an entity or
    # topic it shares with the query). docs/router.md ("Relevance floors") gives the measurements.
    # A fact is offered when a query word matches its statement or its similarity is above this; 0 by
    # default, which drops only facts that have nothing in common with the query: facts are few and short, and what links a fact to a question is often knowledge of
    # the world, not words or MiniLM similarity ("our company" and "works at Brightpath": 0.01); at 0.2
    # the support demo's agent asked for the company again three times more.
    fact_min_similarity: float = 0.0
    # An episode found by search is offered when a query word, entity or topic matches it or its
    # similarity is above this; the turns beside it and its session's summary go with it.
    # 0 by default: at 0.1 (where LoCoMo lost nothing) the knowledge-update set lost the newer statement
    # in 8% of its questions ("I moved to Austin" shares no word with "Where do I live now?").
    episode_min_similarity: float = 0.0


_QUERY_WORD = re.compile(r"\w+")


def query_words(query: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _QUERY_WORD.findall(query))


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


def fact_above_floor(parts: dict[str, float], w: HeuristicWeights, *, names_attribute: bool = False) -> bool:
    """A fact found for a query clears the semantic layer's floor: a query word matches its statement
    (score part `text`, which is 0 without a match) or names its attribute ("which editor?" and
    `editor`), or its vector is more similar than the floor."""
    return names_attribute or parts.get("text", 0.0) > 0.0 or parts.get("vector", 0.0) > w.fact_min_similarity


def names_attribute(words: frozenset[str], attribute: str) -> bool:
    """Whether a word of the query (`query_words`) is a word of the attribute's name (`home_city`:
    home, city)."""
    return any(part in words for part in attribute.casefold().replace("-", "_").split("_") if len(part) > 2)


def episode_above_floor(parts: dict[str, float], w: HeuristicWeights) -> bool:
    """An episode found by search clears the episodic layer's floor: a query word, entity or topic
    matches it (score parts `text`, `overlap`) or its vector is similar enough."""
    return (
        parts.get("text", 0.0) > 0.0
        or parts.get("overlap", 0.0) > 0.0
        or parts.get("vector", 0.0) > w.episode_min_similarity
    )


def served_fact(value: str, origin: str) -> bool:
    """Whether a fact may be served: one extracted with a fragment for its value ("13)", "want") is not,
    whenever it was extracted (extraction has rejected such values since; see semantic.validation).
    A value a client or operator wrote is served as written."""
    return origin != FactOrigin.EXTRACTED or not fact_value_is_fragment(value)


def _is_search_hit(item: Candidate) -> bool:
    return item.type == "episode" and "fused" in item.score_parts


def _is_session_summary_episode(item: Candidate) -> bool:
    return item.type == "episode" and any(s.external_id == SESSION_SUMMARY_EXTERNAL_ID for s in item.sources)


def settle_episodes(items: list[Candidate], w: HeuristicWeights) -> list[Candidate]:
    """The episodic candidates that earn a place, and which of them exclude each other.

    - A session's summary episode is not offered: it holds the text of the session's summary, which is
      offered as `summary:<session>` when the session has hits.
    - A search hit under the floor (episode_above_floor) is not offered, nor the passages offered beside
      it (score part `neighbour_of`, the passage id of the hit, score part `passage`).
    - A session's summary and that session's turns cover each other: whichever packing takes first,
      the other is not served beside it, so no context repeats a turn and the summary that repeats it.
    The session's recent events are offered whatever their relevance."""
    dropped: set[float] = set()
    kept: list[Candidate] = []
    for item in items:
        if _is_session_summary_episode(item) or (_is_search_hit(item) and not episode_above_floor(item.score_parts, w)):
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
        of_session = turns.get(item.id.split(":", 1)[1], [])
        item.covers = item.covers | {turn.id for turn in of_session}
        for turn in of_session:
            turn.covers = turn.covers | {item.id}
    return kept


def query_timeframe(*, tenant: Tenant, request: ContextRequest) -> Timeframe | None:
    """The window a time phrase of the query names, resolved against the request's `now`, else its
    `as_of`, else the server's time (router.timeframe). An event ("before the move") is placed at its
    first mention in the subject's history up to then, which costs one query, and only then."""
    if not request.query.strip():
        return None
    now = request.now or request.as_of or timezone.now()

    def first_mention(word: str, until: datetime) -> datetime | None:
        return router_selectors.first_mention(tenant=tenant, subject=request.subject, word=word, until=until)

    return query_window(request.query, now, first_mention)


def facts_as_of(request: ContextRequest, frame: Timeframe | None) -> datetime | None:
    """The moment facts are read at: the request's `as_of`; else, when the query names a time that is
    over ("last year", "in May 2023", "before the move"), its last instant (the window is half-open: a
    value observed at its end, such as the city the move brought, is not yet held), so that what was
    true then is served."""
    if request.as_of is not None or frame is None or frame.end is None:
        return request.as_of
    return frame.end - timedelta(microseconds=1) if frame.end <= (request.now or timezone.now()) else None


class HeuristicPolicy:
    """Procedures that match, then the subject's facts that matter for the query, then this session's
    recent events and targeted past events (hybrid search plus their neighbouring turns, session
    summaries), then the scratchpad."""

    name = "heuristic-v1"

    def __init__(self, weights: HeuristicWeights | None = None) -> None:
        self.w = weights or HeuristicWeights()

    def offer(self, *, tenant: Tenant, request: ContextRequest, plan: BudgetPlan) -> LayerCandidates:

        query = request.query.strip()
        # The query's vector is computed while the reads that do not need it run; the episodic
        # search awaits it only for its vector channel.
        pending = embed_in_background(query) if query else None
        entities, topics = extract_entities_topics(tenant=tenant, text=query) if query else ([], [])
        frame = query_timeframe(tenant=tenant, request=request)
        out = LayerCandidates()
        recent = (
            router_selectors.recent_episodes(
                tenant=tenant,
                session=request.session,
                until=request.as_of,
                limit=self.w.recent_limit + request.transcript_turns,
            )
            if request.session and (plan.episodic > 0 or plan.procedural > 0)
            else []
        )
        # Procedures and facts do not depend on the episodes: they are read beside them, on a second
        # connection (tenants.readers), while this thread reads the scratchpad and the history.
        rules_and_facts = (
            read_beside(
                self.rules_and_facts,
                tenant=tenant,
                request=request,
                plan=plan,
                entities=entities,
                topics=topics,
                recent=recent,
                embedding=pending,
                frame=frame,
            )
            if plan.procedural > 0 or plan.semantic > 0
            else None
        )
        if plan.working > 0 and request.session:
            out.working, out.working_document, out.working_version = self.notes(
                tenant=tenant, request=request, plan=plan
            )
        if plan.episodic > 0:
            out.episodic = settle_episodes(
                self.episodes(tenant=tenant, request=request, plan=plan, embedding=pending, recent=recent, frame=frame),
                self.w,
            )
        if rules_and_facts is not None:
            out.procedural, out.semantic = rules_and_facts.result()
        return out

    def rules_and_facts(
        self,
        *,
        tenant: Tenant,
        request: ContextRequest,
        plan: BudgetPlan,
        entities: Sequence[str],
        topics: Sequence[str],
        recent: Sequence[router_selectors.EpisodeRow],
        embedding: Future[list[float]] | None,
        frame: Timeframe | None,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """The procedural and the semantic layers' candidates. The facts come first: their text part
        runs while the query is still being embedded."""
        semantic = (
            self.facts(tenant=tenant, request=request, embedding=embedding, frame=frame) if plan.semantic > 0 else []
        )
        vector = embedding.result() if embedding is not None else None
        procedural = (
            self.procedures(
                tenant=tenant, request=request, entities=entities, topics=topics, recent=recent, embedding=vector
            )
            if plan.procedural > 0
            else []
        )
        return procedural, semantic

    # --- procedural -------------------------------------------------------------------------
    def procedures(
        self,
        *,
        tenant: Tenant,
        request: ContextRequest,
        entities: Sequence[str],
        topics: Sequence[str],
        recent: Sequence[router_selectors.EpisodeRow],
        embedding: list[float] | None,
    ) -> list[Candidate]:

        tool_events = [
            {"kind": e.kind, "role": e.role, "content": e.content, "payload": e.payload}
            for e in recent
            if e.kind in ("tool_call", "tool_result")
        ]
        matches = procedure_match(
            tenant=tenant,
            message=request.query,
            tool_events=tool_events,
            entities=entities,
            topics=topics,
            agent=request.agent,
            limit=10,
            session_kind=request.session_kind,
            query_embedding=embedding,
        )
        out = []
        for rank, match in enumerate(matches):
            procedure = match.procedure
            value = max(match.score, 0.0) * (0.5 + 0.5 * match.confidence)
            out.append(
                Candidate(
                    id=f"procedure:{procedure.pk}",
                    type="procedure",
                    layer="procedural",
                    section="Procedures",
                    text=_clip(router_selectors.procedure_text(procedure, match.confidence), 200),
                    value=value,
                    score=match.score,
                    score_parts={**match.score_parts, "match": match.score, "confidence": match.confidence},
                    order=(rank,),
                )
            )
        return out

    # --- semantic ---------------------------------------------------------------------------
    def facts(
        self,
        *,
        tenant: Tenant,
        request: ContextRequest,
        embedding: list[float] | Future[list[float]] | None,
        frame: Timeframe | None,
    ) -> list[Candidate]:

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
            )
            scored = [
                (r, r.score, dict(r.score_parts))
                for r in results
                if served_fact(r.value, r.origin)
                and fact_above_floor(r.score_parts, self.w, names_attribute=names_attribute(words, r.attribute))
            ]
        else:
            facts = facts_for_subject(tenant=tenant, subject=request.subject, as_of=request.as_of)
            scored = [
                (f, f.confidence, {"confidence": f.confidence})
                for f in list(facts)[:50]
                if served_fact(f.value, f.origin)
            ]
        if not scored:
            return []
        top = max(s for _, s, _ in scored) or 1.0
        sources = router_selectors.fact_sources(tenant=tenant, fact_ids=[f.id for f, _, _ in scored])
        out = []
        for rank, (fact, score, parts) in enumerate(scored):
            relevance = max(score, 0.0) / top
            fact_sources = sources.get(fact.id, [])
            out.append(
                Candidate(
                    id=f"fact:{fact.id}",
                    type="fact",
                    layer="semantic",
                    section="Known facts",
                    text=_clip(
                        f"{fact.statement} ({format_day(fact.valid_from)}, confidence {fact.confidence:.2f})",
                        self.w.fact_max_tokens,
                    ),
                    value=relevance**self.w.sharpness + 1e-6,
                    score=score,
                    score_parts=parts,
                    sources=fact_sources,
                    occurred_at=fact.valid_from,
                    order=(rank,),
                    covers=frozenset(f"episode:{s.episode_id}" for s in fact_sources),
                )
            )
        return out

    # --- working ----------------------------------------------------------------------------
    def notes(
        self, *, tenant: Tenant, request: ContextRequest, plan: BudgetPlan
    ) -> tuple[list[Candidate], dict[str, Any] | None, int | None]:

        pad = scratchpad_get(tenant=tenant, session_external_id=request.session)
        if pad is None or not pad.document:
            return [], None, None
        out = []
        keys = list(pad.document)
        for index, key in enumerate(keys):
            value = pad.document[key]
            rendered = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
            out.append(
                Candidate(
                    id=f"note:{key}",
                    type="working_note",
                    layer="working",
                    section="Working notes",
                    text=_clip(f"{key}: {rendered}", max(plan.working - 8, 4)),
                    # Earlier keys first when not everything fits: documents put the plan up front.
                    value=1.0 - index / (len(keys) + 1),
                    score=1.0,
                    score_parts={"position": float(index)},
                    occurred_at=pad.updated_at,
                    order=(index,),
                )
            )
        return out, dict(pad.document), pad.version

    # --- episodic ---------------------------------------------------------------------------
    def _episode_candidate(
        self,
        row: router_selectors.EpisodeRow,
        *,
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
        speaker = row.role or row.kind
        excerpt = isinstance(row, router_selectors.PassageRow) and not row.whole
        content = row.content
        if isinstance(row, router_selectors.PassageRow) and excerpt:
            content = f"{'… ' if row.char_start > 0 else ''}{content}{'' if row.last else ' …'}"
        raw = f"{speaker}: {content}" if speaker else content
        text = " ".join(raw.split())
        # Stored content that needs no normalising is priced from its stored count; other lines are counted
        # (an excerpt is at most a passage long).
        counts = said_tokens(speaker, row.content, row.token_count) if text == raw and not excerpt else None
        if counts is None or counts[0] > self.w.episode_max_tokens:
            text, line_count = _clip(text, self.w.episode_max_tokens), -1
        else:
            line_count = counts[1]
        position = row.position if isinstance(row, router_selectors.PassageRow) else 0
        day = row.occurred_at.date().toordinal()
        item_id = (
            f"passage:{row.passage_id}"
            if isinstance(row, router_selectors.PassageRow) and excerpt
            else f"episode:{row.id}"
        )
        return self._length_scaled(
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
                sources=[router_selectors.episode_source(row)],
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
            )
        )

    def _length_scaled(self, item: Candidate) -> Candidate:
        item.value *= (line_tokens(item) / self.w.length_reference) ** self.w.length_exponent
        return item

    def episodes(
        self,
        *,
        tenant: Tenant,
        request: ContextRequest,
        plan: BudgetPlan,
        embedding: list[float] | Future[list[float]] | None,
        recent: Sequence[router_selectors.EpisodeRow],
        frame: Timeframe | None,
    ) -> list[Candidate]:
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
            value = self.w.recent_base * self.w.recent_decay**rank
            out.append(
                self._episode_candidate(
                    row,
                    section="Recent activity",
                    value=value,
                    score=value,
                    parts={"recency_rank": float(rank)},
                    newest_day_first=False,
                )
            )
        if not request.query.strip():
            return out + self._latest(tenant=tenant, request=request, seen_hashes=seen_hashes)
        budget = plan.episodic + plan.procedural + plan.semantic
        limit = max(self.w.min_candidates, min(self.w.max_candidates, budget // self.w.tokens_per_candidate))
        hits = router_selectors.episode_hits(
            tenant=tenant,
            query=request.query,
            subject=request.subject,
            until=request.as_of,
            limit=limit,
            embedding=embedding,
            exclude_ids=sorted(recent_ids),
        )
        if not hits:
            return out + self._latest(tenant=tenant, request=request, seen_hashes=seen_hashes)
        relevance = self.relevance(request.query, hits, frame=frame)
        anchors = sorted(hits, key=lambda h: (-relevance[h.row.passage_id], h.row.passage_id))[: self.w.neighbour_hits]
        neighbours = router_selectors.passage_neighbours(
            tenant=tenant, passage_ids=[h.row.passage_id for h in anchors], until=request.as_of
        )
        answers: list[tuple[float, router_selectors.PassageRow, Candidate]] = []
        for hit in hits:
            row = hit.row
            if row.passage_id in seen_passages or row.content_hash in seen_hashes:
                continue
            seen_passages.add(row.passage_id)
            seen_hashes.add(row.content_hash)
            rel = relevance[row.passage_id]
            item = self._episode_candidate(
                row,
                section="Relevant history",
                value=rel**self.w.sharpness + 1e-6,
                score=hit.score,
                parts={**hit.score_parts, "relevance": round(rel, 6), "passage": float(row.passage_id)},
            )
            out.append(item)
            if rel >= self.w.update_relevance:
                answers.append((rel, row, item))
        self._label_updates(tenant=tenant, answers=answers)
        for anchor_id, row in neighbours:
            if row.id in recent_ids or row.passage_id in seen_passages or row.content_hash in seen_hashes:
                continue
            seen_passages.add(row.passage_id)
            seen_hashes.add(row.content_hash)
            rel = relevance.get(anchor_id, 0.0) * self.w.neighbour_factor
            out.append(
                self._episode_candidate(
                    row,
                    section="Relevant history",
                    value=rel**self.w.sharpness + 1e-6,
                    score=rel,
                    parts={"neighbour_of": float(anchor_id), "relevance": rel},
                )
            )
        out.extend(self._summaries(tenant=tenant, request=request, hits=hits, relevance=relevance))
        out.extend(self._latest(tenant=tenant, request=request, seen_hashes=seen_hashes))
        return out

    def _latest(self, *, tenant: Tenant, request: ContextRequest, seen_hashes: set[str]) -> list[Candidate]:
        if request.session or self.w.latest_limit <= 0:
            return []
        rows = router_selectors.subject_latest_episodes(
            tenant=tenant, subject=request.subject, until=request.as_of, limit=self.w.latest_limit
        )
        out = []
        for rank, row in enumerate(rows):
            if row.content_hash in seen_hashes:
                continue
            seen_hashes.add(row.content_hash)
            value = self.w.latest_value * self.w.recent_decay**rank
            out.append(
                self._episode_candidate(
                    row,
                    section="Recent activity",
                    value=value,
                    score=value,
                    parts={"latest_rank": float(rank)},
                    newest_day_first=False,
                )
            )
        return out

    def _label_updates(
        self, *, tenant: Tenant, answers: Sequence[tuple[float, router_selectors.PassageRow, Candidate]]
    ) -> None:
        """Of the lines that answer the query, label each older one that a newer one speaks of the same
        thing as (close in meaning) "(earlier)", and make it require the newer line closest to it: a
        stale statement never reaches the context without its update, and comes after it."""
        pool = sorted(answers, key=lambda a: (-a[0], a[1].passage_id))[: self.w.update_pool]
        if len(pool) < 2:
            return
        similarity = router_selectors.similar_passages(
            tenant=tenant, passage_ids=[row.passage_id for _, row, _ in pool]
        )
        for _, older, item in pool:
            newer = [
                (similarity.get((min(a, b), max(a, b)), 0.0), row.passage_id, other)
                for _, row, other in pool
                if row.occurred_at > older.occurred_at and row.id != older.id
                for a, b in [(row.passage_id, older.passage_id)]
            ]
            close = [n for n in newer if n[0] >= self.w.update_similarity]
            if not close:
                continue
            sim, _, update = max(close, key=lambda n: (n[0], -n[1]))
            item.text = f"(earlier) {item.text}"
            item.line_tokens = -1
            item.requires = item.requires | {update.id}
            item.score_parts["earlier_than"] = float(update.sources[0].episode_id)
            item.score_parts["update_similarity"] = round(sim, 6)

    def relevance(
        self, query: str, hits: Sequence[router_selectors.EpisodeHit], *, frame: Timeframe | None = None
    ) -> dict[int, float]:
        """Each hit's relevance in [0, 1], by passage id. BM25 over the pool (router.rerank) relative to
        the best, plus the vector similarity scaled to the pool's range, weighted; then scaled down for
        lines by other speakers than the one the query names, and by the standing of the line's
        session. Reciprocal rank fusion orders the pool well enough to gather it, but flattens the
        scores, and ts_rank weighs every word alike; packing by value per token needs values that fall
        as fast as relevance does."""
        if not hits:
            return {}
        lexical = bm25_scores(query, [f"{h.row.role} {h.row.content}" for h in hits])
        best_lexical = max(lexical) or 1.0
        vectors = [h.score_parts.get("vector", 0.0) for h in hits]
        low, high = min(vectors), max(vectors)
        w = self.w
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

    def _summaries(
        self,
        *,
        tenant: Tenant,
        request: ContextRequest,
        hits: Sequence[router_selectors.EpisodeHit],
        relevance: dict[int, float],
    ) -> list[Candidate]:
        best: dict[str, float] = {}
        first_hit: dict[str, router_selectors.EpisodeRow] = {}
        for hit in hits:
            session = hit.row.session
            if session and session != request.session and episode_above_floor(hit.score_parts, self.w):
                best[session] = max(best.get(session, 0.0), relevance[hit.row.passage_id])
                first_hit.setdefault(session, hit.row)
        summaries = router_selectors.session_summaries(tenant=tenant, sessions=sorted(best))
        out = []
        for session, (summary, started_at) in summaries.items():
            rel = best[session] * self.w.summary_factor
            moment: datetime = started_at
            out.append(
                self._length_scaled(
                    Candidate(
                        id=f"summary:{session}",
                        type="session_summary",
                        layer="episodic",
                        section="Relevant history",
                        text=_clip(f"summary: {' '.join(summary.split())}", self.w.episode_max_tokens),
                        value=rel**self.w.sharpness + 1e-6,
                        score=rel,
                        score_parts={"session_relevance": best[session]},
                        sources=[router_selectors.episode_source(first_hit[session], quoted=False)],
                        occurred_at=moment,
                        group=moment.date().isoformat(),
                        group_header=format_day(moment),
                        # Before the session's own lines in its block.
                        order=(-moment.date().toordinal(), session, moment, -1, 0),
                    )
                )
            )
        return out

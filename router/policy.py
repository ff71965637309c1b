"""What to load into a context: the pluggable policy, and the default heuristic one.

A policy turns a request into candidate items per layer, each with a value; packing and rendering
(router.packing, router.rendering) are shared, so every policy gets the same budget guarantees. The
class named in settings.ENGRAM["CONTEXT_POLICY"] is the extension point for a learned memory policy:
the traces it is trained on come from `manage.py export_traces`. Each layer's candidates are built in
router.candidates.<layer>; the heuristic policy orchestrates them.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from datetime import datetime
from functools import lru_cache
from typing import Protocol

from django.conf import settings
from django.utils import timezone
from django.utils.module_loading import import_string

from core.embedding import embed_in_background
from episodic.aliases import Aliases, aliases_for, has_aliases
from episodic.extraction import MAX_ENTITY_CHARS, extract_entities_topics, normalise_terms
from episodic.selectors import EpisodeRow, episode_rows_recent, passage_first_mention
from router.candidates.common import HeuristicWeights
from router.candidates.episodic import episode_candidates, settle_episodes
from router.candidates.procedural import procedure_candidates
from router.candidates.semantic import fact_candidates, settle_facts
from router.candidates.working import note_candidates
from router.helper_threads import read_beside
from router.parts import packer_parts
from router.timeframe import Timeframe, query_window
from router.types import BudgetPlan, Candidate, ContextRequest, LayerCandidates
from router.value import reads_beside, reads_sentences
from tenants.models import Tenant


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


def query_aliases(*, tenant: Tenant, subject: str, entities: Sequence[str]) -> Aliases | None:
    """The aliases of the query's entities for the subject, looked up once for history's search and the
    facts' (each looked them up itself: the same statement twice a request), under the names both ask
    with (as extracted, and normalised); None when the query names nothing or the tenant has never had
    an alias."""
    if not entities or not has_aliases(tenant):
        return None
    names = [*entities, *normalise_terms(entities, max_chars=MAX_ENTITY_CHARS)]
    return aliases_for(tenant=tenant, names=names, subject=subject, groups=True)


def query_timeframe(*, tenant: Tenant, request: ContextRequest) -> Timeframe | None:
    """The window a time phrase of the query names, resolved against the request's `now`, else its
    `as_of`, else the server's time (router.timeframe). An event ("before the move") is placed at its
    first mention in the subject's history up to then, which costs one query, and only then."""
    if not request.query.strip():
        return None
    now = request.now or request.as_of or timezone.now()

    def first_mention(word: str, until: datetime) -> datetime | None:
        return passage_first_mention(tenant=tenant, subject=request.subject, word=word, until=until)

    return query_window(request.query, now, first_mention)


class HeuristicPolicy:
    """Procedures that match, then the subject's facts that matter for the query, then this session's
    recent events and targeted past events (hybrid search plus their neighbouring turns, session
    summaries), then the scratchpad."""

    name = "heuristic-v1"

    def __init__(self, weights: HeuristicWeights | None = None) -> None:
        self.w = weights or HeuristicWeights()

    def offer(self, *, tenant: Tenant, request: ContextRequest, plan: BudgetPlan) -> LayerCandidates:

        query = request.query.strip()
        parts = packer_parts()
        # The query's vector is computed while the reads that do not need it run; the episodic
        # search awaits it only for its vector channel.
        pending = embed_in_background(query) if query else None
        entities, topics = extract_entities_topics(tenant=tenant, text=query) if query else ([], [])
        aliases = query_aliases(tenant=tenant, subject=request.subject, entities=entities)
        frame = query_timeframe(tenant=tenant, request=request)
        out = LayerCandidates()
        recent = (
            episode_rows_recent(
                tenant=tenant,
                session=request.session,
                until=request.as_of,
                limit=self.w.recent_limit + request.transcript_turns,
            )
            if request.session and (plan.episodic > 0 or plan.procedural > 0)
            else []
        )
        # Procedures and facts do not depend on the episodes: they are read beside them, on a second
        # connection (router.helper_threads), while this thread reads the scratchpad and the history.
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
                aliases=aliases,
            )
            if plan.procedural > 0 or plan.semantic > 0
            else None
        )
        if plan.working > 0 and request.session:
            out.working, out.working_document, out.working_version = note_candidates(
                tenant=tenant, request=request, plan=plan
            )
        if plan.episodic > 0:
            out.episodic = settle_episodes(
                episode_candidates(
                    tenant=tenant,
                    request=request,
                    plan=plan,
                    embedding=pending,
                    recent=recent,
                    frame=frame,
                    w=self.w,
                    extracted=(entities, topics),
                    parts=parts,
                    aliases=aliases,
                    sentences=reads_sentences(tenant=tenant),
                    beside=reads_beside(tenant=tenant),
                ),
                self.w,
            )
        if rules_and_facts is not None:
            out.procedural, out.semantic = rules_and_facts.result()
        settle_facts(
            out.semantic,
            out.episodic,
            cover=parts.fact_cover,
            bound=parts.fact_bound,
            query=query,
            defer=parts.fact_defer,
            earlier=parts.fact_earlier,
        )
        return out

    def rules_and_facts(
        self,
        *,
        tenant: Tenant,
        request: ContextRequest,
        plan: BudgetPlan,
        entities: Sequence[str],
        topics: Sequence[str],
        recent: Sequence[EpisodeRow],
        embedding: Future[list[float]] | None,
        frame: Timeframe | None,
        aliases: Aliases | None = None,
    ) -> tuple[list[Candidate], list[Candidate]]:
        """The procedural and the semantic layers' candidates."""
        semantic = (
            fact_candidates(
                tenant=tenant,
                request=request,
                embedding=embedding,
                frame=frame,
                w=self.w,
                entities=entities,
                aliases=aliases,
            )
            if plan.semantic > 0
            else []
        )
        vector = embedding.result() if embedding is not None else None
        procedural = (
            procedure_candidates(
                tenant=tenant, request=request, entities=entities, topics=topics, recent=recent, embedding=vector
            )
            if plan.procedural > 0
            else []
        )
        return procedural, semantic

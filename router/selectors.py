"""Reads for the router: the episodes, sources and summaries a context is built from, traces, hit rates."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum

from core.errors import NotFound
from episodic.models import Session
from episodic.selectors import (
    EpisodeRow,
    PassageRow,
    episode_rows_latest,
    episode_rows_recent,
    passage_first_mention,
    passage_rows_neighbours,
    passage_search_rows,
    passage_similarities,
)
from procedural.models import Procedure
from router.models import ContextFeedback, ContextTrace
from router.types import Source
from semantic.selectors import fact_sources as semantic_fact_sources
from tenants.models import Tenant


@dataclass(frozen=True)
class EpisodeHit:
    """A ranked passage: the whole episode when it is one passage, else a part of it."""

    row: PassageRow
    score: float
    score_parts: dict[str, float]


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


def recent_episodes(
    *, tenant: Tenant, session: str, until: datetime | None = None, limit: int = 40
) -> list[EpisodeRow]:
    """The latest events of a session, newest first (episodic.selectors.episode_rows_recent)."""
    return episode_rows_recent(tenant=tenant, session=session, until=until, limit=limit)


def subject_latest_episodes(
    *, tenant: Tenant, subject: str, until: datetime | None = None, limit: int = 5
) -> list[EpisodeRow]:
    """The subject's latest events in any session, newest first (episodic.selectors.episode_rows_latest)."""
    return episode_rows_latest(tenant=tenant, subject=subject, until=until, limit=limit)


def passage_neighbours(
    *, tenant: Tenant, passage_ids: Sequence[int], until: datetime | None = None
) -> list[tuple[int, PassageRow]]:
    """The passage before and after each anchor (episodic.selectors.passage_rows_neighbours)."""
    return passage_rows_neighbours(tenant=tenant, passage_ids=passage_ids, until=until)


def first_mention(*, tenant: Tenant, subject: str, word: str, until: datetime) -> datetime | None:
    """When the subject's history first mentions `word` before `until` (episodic.selectors.
    passage_first_mention): the time an event named in a query is placed at."""
    return passage_first_mention(tenant=tenant, subject=subject, word=word, until=until)


def similar_passages(*, tenant: Tenant, passage_ids: Sequence[int]) -> dict[tuple[int, int], float]:
    """Pairwise cosine similarity of these passages (episodic.selectors.passage_similarities)."""
    return passage_similarities(tenant=tenant, passage_ids=passage_ids)


def episode_hits(
    *,
    tenant: Tenant,
    query: str,
    subject: str,
    until: datetime | None,
    limit: int,
    embedding: list[float] | Future[list[float]] | None,
    exclude_ids: Sequence[int],
) -> list[EpisodeHit]:
    """The episodic layer's ranked search over passages (episodic.selectors.passage_search_rows);
    `exclude_ids` are episodes already offered."""

    scored = passage_search_rows(
        tenant=tenant,
        query=query,
        subject=subject,
        until=until,
        limit=limit,
        query_embedding=embedding,
        exclude_episode_ids=list(exclude_ids),
    )
    return [EpisodeHit(row=s.row, score=float(s.score), score_parts=dict(s.score_parts)) for s in scored]


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


def session_summaries(*, tenant: Tenant, sessions: Sequence[str]) -> dict[str, tuple[str, datetime]]:
    """Summaries of these sessions where one exists: session -> (summary, started_at)."""
    if not sessions:
        return {}
    rows = (
        Session.objects.for_tenant(tenant)
        .filter(external_id__in=list(sessions))
        .exclude(summary="")
        .order_by("external_id")
        .values_list("external_id", "summary", "started_at")
    )
    return {name: (summary, started) for name, summary, started in rows}


def procedure_text(procedure: Procedure, confidence: float) -> str:
    """One line for a procedure: its name, what to do, its steps."""
    steps = "; ".join(str(s) for s in procedure.steps or [] if s)
    behaviour = " ".join(procedure.behaviour.split())
    text = f"{procedure.name}: {behaviour}" + (f" Steps: {steps}." if steps else "")
    return f"{text} (confidence {confidence:.2f})"


# --- traces and feedback ----------------------------------------------------------------------
def trace_get(*, tenant: Tenant, trace_id: uuid.UUID) -> ContextTrace:
    trace = ContextTrace.objects.for_tenant(tenant).filter(id=trace_id).first()
    if trace is None:
        raise NotFound("No such context trace.")
    return trace


def trace_list(
    *, tenant: Tenant, subject: str | None = None, session: str | None = None, since: datetime | None = None
) -> QuerySet[ContextTrace]:
    qs = ContextTrace.objects.for_tenant(tenant)
    if subject:
        qs = qs.filter(subject=subject)
    if session:
        qs = qs.filter(session=session)
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    return qs.order_by("-created_at", "-id")


def trace_export_rows(*, tenant: Tenant, since: datetime | None = None) -> Iterator[dict[str, Any]]:
    """Trajectories for training a memory policy: state (the request), items offered, items considered
    and left out, items used, outcome. Oldest first."""
    qs = trace_list(tenant=tenant, since=since).order_by("created_at", "id")
    feedback = {f.trace_id: f for f in ContextFeedback.objects.for_tenant(tenant).filter(trace__in=qs.values("id"))}
    for trace in qs.iterator(chunk_size=500):
        fb = feedback.get(trace.id)
        yield {
            "trace_id": str(trace.id),
            "created_at": trace.created_at.isoformat(),
            "policy": trace.policy,
            "state": trace.request,
            "budgets": trace.budgets,
            "tokens": trace.tokens,
            "offered": trace.offered,
            "considered": trace.considered,
            "used_item_ids": list(fb.used_item_ids) if fb else None,
            "outcome": fb.outcome if fb else None,
            "signal": fb.signal if fb else None,
            "asked_to_repeat": fb.asked_to_repeat if fb else None,
            "latency_ms": trace.latency_ms,
        }


def _hit_rate(used: int | None, offered: int | None) -> float | None:
    return (used or 0) / offered if offered else None


def hit_rates(
    *, tenant: Tenant, subject: str | None = None, session: str | None = None, since: datetime | None = None
) -> dict[str, Any]:
    """Memory hit rate: items used over items offered, over the traces that got feedback."""
    qs = ContextFeedback.objects.for_tenant(tenant)
    if subject:
        qs = qs.filter(subject=subject)
    if session:
        qs = qs.filter(session=session)
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    agg = qs.aggregate(
        offered=Sum("offered_count"),
        used=Sum("used_count"),
        feedback=Count("id"),
        repeats=Count("id", filter=Q(asked_to_repeat=True)),
        successes=Count("id", filter=Q(outcome="success")),
        failures=Count("id", filter=Q(outcome="failure")),
    )
    return {
        "hit_rate": _hit_rate(agg["used"], agg["offered"]),
        "items_offered": agg["offered"] or 0,
        "items_used": agg["used"] or 0,
        "feedback_count": agg["feedback"],
        "asked_to_repeat_rate": agg["repeats"] / agg["feedback"] if agg["feedback"] else None,
        "success_count": agg["successes"],
        "failure_count": agg["failures"],
    }


def hit_rates_by(*, tenant: Tenant, field: str, limit: int = 20) -> list[dict[str, Any]]:
    """Hit rate per subject or per session, the most active first."""
    if field not in ("subject", "session"):
        raise ValueError(field)
    rows = (
        ContextFeedback.objects.for_tenant(tenant)
        .values(field)
        .annotate(offered=Sum("offered_count"), used=Sum("used_count"), feedback=Count("id"))
        .order_by("-feedback", field)[:limit]
    )
    return [
        {field: r[field], "hit_rate": _hit_rate(r["used"], r["offered"]), "feedback_count": r["feedback"]} for r in rows
    ]


def context_latency(*, tenant: Tenant, since: datetime) -> dict[str, Any]:
    qs = ContextTrace.objects.for_tenant(tenant).filter(created_at__gte=since)
    with connection.cursor() as cursor:
        sql, params = qs.values("latency_ms", "total_tokens").query.sql_with_params()
        cursor.execute(
            "SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms),"  # noqa: S608
            " percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms), avg(total_tokens)"
            f" FROM ({sql}) AS t",
            params,
        )
        count, p50, p95, tokens = cursor.fetchone()
    return {
        "requests": count,
        "latency_ms_p50": p50,
        "latency_ms_p95": p95,
        "tokens_mean": float(tokens) if tokens is not None else None,
    }

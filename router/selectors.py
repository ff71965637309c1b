"""Reads for the router: traces, hit rates. (The layers' own reads, the summaries of the sessions a
context draws on among them, are called directly by router.candidates.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any, TypeVar

from django.db import connection
from django.db.models import Aggregate, Count, Q, QuerySet, Sum

from core.errors import NotFound
from router.models import ContextFeedback, ContextTrace
from tenants.models import Tenant

M = TypeVar("M", ContextTrace, ContextFeedback)


# --- traces and feedback ----------------------------------------------------------------------
def _narrowed(qs: QuerySet[M], *, subject: str | None, session: str | None, since: datetime | None) -> QuerySet[M]:
    """Traces or feedback of one subject, one session, since a time: each filter only when given."""
    if subject:
        qs = qs.filter(subject=subject)
    if session:
        qs = qs.filter(session=session)
    if since is not None:
        qs = qs.filter(created_at__gte=since)
    return qs


def trace_get(*, tenant: Tenant, trace_id: uuid.UUID) -> ContextTrace:
    trace = ContextTrace.objects.filter(id=trace_id).first()
    if trace is None:
        raise NotFound("No such context trace.")
    return trace


def trace_list(
    *, tenant: Tenant, subject: str | None = None, session: str | None = None, since: datetime | None = None
) -> QuerySet[ContextTrace]:
    qs = _narrowed(ContextTrace.objects.all(), subject=subject, session=session, since=since)
    return qs.order_by("-created_at", "-id")


def trace_export_rows(*, tenant: Tenant, since: datetime | None = None) -> Iterator[dict[str, Any]]:
    """Trajectories for training a memory policy: state (the request), items offered, items considered
    and left out, items used, outcome. Oldest first."""
    qs = trace_list(tenant=tenant, since=since).order_by("created_at", "id")
    feedback = {f.trace_id: f for f in ContextFeedback.objects.filter(trace__in=qs.values("id"))}
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


def hit_rate_of(used: int | None, offered: int | None) -> float | None:
    return (used or 0) / offered if offered else None


def feedback_totals() -> dict[str, Aggregate]:
    """What a set of feedback adds up to, to aggregate or annotate with: items offered and used, how
    many answers, how many asked to repeat, succeeded and failed."""
    return {
        "offered": Sum("offered_count"),
        "used": Sum("used_count"),
        "feedback": Count("id"),
        "repeats": Count("id", filter=Q(asked_to_repeat=True)),
        "successes": Count("id", filter=Q(outcome="success")),
        "failures": Count("id", filter=Q(outcome="failure")),
    }


def hit_rates(
    *, tenant: Tenant, subject: str | None = None, session: str | None = None, since: datetime | None = None
) -> dict[str, Any]:
    """Memory hit rate: items used over items offered, over the traces that got feedback."""
    qs = _narrowed(ContextFeedback.objects.all(), subject=subject, session=session, since=since)
    agg = qs.aggregate(**feedback_totals())
    return {
        "hit_rate": hit_rate_of(agg["used"], agg["offered"]),
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
        ContextFeedback.objects.values(field)
        .annotate(offered=Sum("offered_count"), used=Sum("used_count"), feedback=Count("id"))
        .order_by("-feedback", field)[:limit]
    )
    return [
        {field: r[field], "hit_rate": hit_rate_of(r["used"], r["offered"]), "feedback_count": r["feedback"]}
        for r in rows
    ]


def context_latency(*, tenant: Tenant, since: datetime) -> dict[str, Any]:
    qs = ContextTrace.objects.filter(created_at__gte=since)
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

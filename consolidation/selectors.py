"""Reads of consolidation and lifecycle: runs and the figures for /v1/stats."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import connection
from django.db.models import Aggregate, Count, Max, Sum
from django.utils import timezone

from consolidation.models import ArchiveManifest, ConsolidationRun, RunStatus
from consolidation.services import backlog_size
from episodic.models import SESSION_SUMMARY_EXTERNAL_ID, Episode
from semantic.models import Fact, FactOrigin
from tenants.models import Tenant
from tenants.scope import tenant_scope


def run_list(*, tenant: Tenant, limit: int = 50) -> list[ConsolidationRun]:
    with tenant_scope(tenant):
        return list(ConsolidationRun.objects.order_by("-created_at", "-id")[:limit])


def growth_per_subject_week(*, tenant: Tenant, weeks: int = 4) -> list[dict[str, Any]]:
    """Rows and bytes of memory added per subject per ISO week (episodes and facts), newest first."""
    since = timezone.now() - timedelta(weeks=weeks)
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT subject, week, sum(rows)::bigint, sum(bytes)::bigint FROM (
                SELECT subject, date_trunc('week', created_at) AS week, count(*) AS rows,
                       sum(octet_length(content) + octet_length(payload::text)) AS bytes
                FROM episodic_episode WHERE tenant_id = %s AND created_at >= %s GROUP BY 1, 2
                UNION ALL
                SELECT subject, date_trunc('week', recorded_at), count(*),
                       sum(octet_length(statement) + octet_length(value))
                FROM semantic_fact WHERE tenant_id = %s AND recorded_at >= %s GROUP BY 1, 2
            ) t GROUP BY subject, week ORDER BY week DESC, subject LIMIT 500
            """,
            [tenant.id, since, tenant.id, since],
        )
        return [
            {"subject": s, "week": w.date().isoformat(), "rows": int(r), "bytes": int(b or 0)}
            for s, w, r, b in cursor.fetchall()
        ]


def run_totals() -> dict[str, Aggregate]:
    """What a set of consolidation runs adds up to, to aggregate or annotate with: episodes read, and
    facts created, superseded, confirmed and sent to review."""
    return {
        "episodes": Sum("episodes_read"),
        "created": Sum("facts_created"),
        "superseded": Sum("facts_superseded"),
        "confirmed": Sum("facts_confirmed"),
        "pending": Sum("facts_pending"),
    }


def consolidation_stats(*, tenant: Tenant) -> dict[str, Any]:
    """Consolidation ratio (episodes per extracted fact), backlogs, extractor cost, archive figures and
    weekly growth per subject: the consolidation part of GET /v1/stats."""
    with tenant_scope(tenant):
        runs = ConsolidationRun.objects.all()
        totals = runs.aggregate(
            **run_totals(),
            calls=Sum("llm_calls"),
            tokens_in=Sum("input_tokens"),
            tokens_out=Sum("output_tokens"),
            cache_read=Sum("cache_read_tokens"),
            cost=Sum("cost_usd"),
            last=Max("finished_at"),
        )
        by_status = dict(runs.values_list("status").annotate(n=Count("id")).values_list("status", "n"))
        extracted = Fact.objects.filter(origin=FactOrigin.EXTRACTED).count()
        archive = ArchiveManifest.objects.aggregate(
            files=Count("id"), episodes=Sum("episode_count"), bytes=Sum("bytes")
        )
        hot_episodes = Episode.objects.count()
    episodes_read = totals["episodes"] or 0
    new_facts = (totals["created"] or 0) + (totals["superseded"] or 0) + (totals["pending"] or 0)
    return {
        "consolidation_ratio": round(episodes_read / new_facts, 3) if new_facts else None,
        "episodes_consolidated": episodes_read,
        "facts_extracted": extracted,
        "facts_created": totals["created"] or 0,
        "facts_confirmed": totals["confirmed"] or 0,
        "facts_superseded": totals["superseded"] or 0,
        "facts_sent_to_review": totals["pending"] or 0,
        "backlog": {"consolidation": backlog_size(tenant=tenant)},
        "runs": {
            "by_status": {s: by_status.get(s, 0) for s in RunStatus.values},
            "last_finished_at": totals["last"].isoformat() if totals["last"] else None,
        },
        "extractor_cost": {
            "llm_calls": totals["calls"] or 0,
            "input_tokens": totals["tokens_in"] or 0,
            "output_tokens": totals["tokens_out"] or 0,
            "cache_read_tokens": totals["cache_read"] or 0,
            "cost_usd": round(totals["cost"] or 0.0, 6),
        },
        "episodes": {
            "hot": hot_episodes,
            "archived": archive["episodes"] or 0,
            "archive_files": archive["files"],
            "archive_bytes": archive["bytes"] or 0,
        },
        "growth_per_subject_week": growth_per_subject_week(tenant=tenant),
    }


def sessions_with_stored_summary(*, tenant: Tenant) -> list[int]:
    """Ids of the tenant's sessions that hold a summary written by consolidation, oldest first."""
    with tenant_scope(tenant):
        return list(
            Episode.objects.filter(external_id=SESSION_SUMMARY_EXTERNAL_ID, kind="summary")
            .order_by("session_id")
            .values_list("session_id", flat=True)
            .distinct()
        )

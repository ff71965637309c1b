"""The dashboard's reads: reports over every layer for one tenant (or one subject), and GET /v1/stats.

They live above the layers because they read all of them; nothing imports this app back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any, TypeVar

from django.db.models import Case, Count, F, Max, Min, Model, Q, QuerySet, Sum, When, Window
from django.db.models.functions import RowNumber, TruncDate, TruncWeek
from django.utils import timezone

from consolidation.models import ConsolidationRun, ConsolidationWatermark
from consolidation.selectors import consolidation_stats, run_totals
from consolidation.services import backlog_queryset
from episodic.models import Episode, EpisodeKind, Session, SessionStatus
from episodic.selectors import embedding_backlog, episodic_stats
from privacy.selectors import erasure_requests_by_status, erasures_in_progress
from procedural.models import Procedure, ProcedureStatus
from procedural.selectors import procedure_stats
from router.models import ContextFeedback, ContextTrace
from router.selectors import context_latency, feedback_totals, hit_rate_of, hit_rates, hit_rates_by
from semantic.models import Fact, FactChange, FactStatus
from semantic.selectors import fact_sources, facts_for_subject
from tenants.models import Tenant

M = TypeVar("M", bound=Model)

WEEKS = 12
DAYS = 30
SUBJECT_SESSIONS = 20
EPISODES_PER_SESSION = 40
PAST_FACTS = 30


def _weeks(now: datetime, weeks: int) -> list[date]:
    monday = (now - timedelta(days=now.weekday())).date()
    return [monday - timedelta(weeks=weeks - 1 - i) for i in range(weeks)]


def _days(now: datetime, days: int) -> list[date]:
    today = now.date()
    return [today - timedelta(days=days - 1 - i) for i in range(days)]


def _as_date(value: datetime | date) -> date:
    return value.date() if isinstance(value, datetime) else value


def _window(buckets_of: Callable[[datetime, int], list[date]], count: int) -> tuple[list[date], datetime]:
    """The last `count` buckets (days or weeks, the current one last) and the moment the first begins."""
    now = timezone.now()
    buckets = buckets_of(now, count)
    return buckets, datetime.combine(buckets[0], datetime.min.time(), tzinfo=now.tzinfo)


def _of_subject(qs: QuerySet[M], subject: str | None) -> QuerySet[M]:
    """The rows of `subject`, or all of them when none is given."""
    return qs.filter(subject=subject) if subject else qs


@dataclass(frozen=True)
class Growth:
    weeks: list[date]
    episodes: list[int]
    sessions: list[int]
    facts: list[int]


def memory_growth(*, tenant: Tenant, weeks: int = WEEKS, subject: str | None = None) -> Growth:
    """New episodes, sessions and facts per week (UTC weeks starting Monday), the last `weeks` weeks,
    each in the week it happened: an episode when it occurred, a session when it started, a fact when
    it was observed (its source's time), never when it was stored, so an import shows as history."""

    buckets, since = _window(_weeks, weeks)

    def per_week(qs: Any, field: str) -> list[int]:
        rows = (
            _of_subject(qs, subject)
            .filter(**{f"{field}__gte": since})
            .annotate(week=TruncWeek(field))
            .values("week")
            .annotate(n=Count("id"))
            .values_list("week", "n")
        )
        counts = {_as_date(week): n for week, n in rows}
        return [counts.get(week, 0) for week in buckets]

    return Growth(
        weeks=buckets,
        episodes=per_week(Episode.objects.all(), "occurred_at"),
        sessions=per_week(Session.objects.all(), "started_at"),
        facts=per_week(Fact.objects.all(), "valid_from"),
    )


@dataclass(frozen=True)
class TriggerSeries:
    days: list[date]
    runs: dict[str, list[int]]
    facts: dict[str, list[int]]
    totals: list[dict[str, Any]]


def consolidation_triggers(*, tenant: Tenant, days: int = DAYS, subject: str | None = None) -> TriggerSeries:
    """Consolidation runs per day and trigger, the facts each trigger wrote, and all-time totals."""

    buckets, since = _window(_days, days)
    qs = _of_subject(ConsolidationRun.objects.all(), subject)
    rows = (
        qs.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("day", "trigger")
        .annotate(n=Count("id"), written=Sum(F("facts_created") + F("facts_superseded")))
        .values_list("day", "trigger", "n", "written")
    )
    runs: dict[str, list[int]] = {}
    facts: dict[str, list[int]] = {}
    index = {day: i for i, day in enumerate(buckets)}
    for day, trigger, n, written in rows:
        i = index.get(_as_date(day))
        if i is None:
            continue
        runs.setdefault(trigger, [0] * days)[i] += n
        facts.setdefault(trigger, [0] * days)[i] += written or 0
    totals = list(
        qs.values("trigger")
        .annotate(
            runs=Count("id"),
            failed=Count("id", filter=Q(status="failed")),
            **run_totals(),
            last=Max("created_at"),
        )
        .order_by("-runs", "trigger")
    )
    return TriggerSeries(
        days=buckets, runs=dict(sorted(runs.items())), facts=dict(sorted(facts.items())), totals=totals
    )


@dataclass(frozen=True)
class HitRates:
    overall: dict[str, Any]
    days: list[date]
    daily: list[float | None]
    conversations: list[dict[str, Any]]
    # Conversations with feedback in all; `conversations` holds the most recent `limit` of them.
    conversation_total: int = 0


def memory_hit_rates(*, tenant: Tenant, days: int = DAYS, subject: str | None = None, limit: int = 20) -> HitRates:
    """Items used over items offered (router feedback): overall, per day, and per conversation (most
    recent first)."""

    buckets, since = _window(_days, days)
    qs = _of_subject(ContextFeedback.objects.all(), subject)
    daily_rows = (
        qs.filter(created_at__gte=since)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(offered=Sum("offered_count"), used=Sum("used_count"))
        .values_list("day", "offered", "used")
    )
    by_day = {_as_date(day): (used or 0) / offered for day, offered, used in daily_rows if offered}
    rows = list(
        qs.values("session", "subject")
        .annotate(**feedback_totals(), last=Max("created_at"))
        .order_by("-last", "session")[:limit]
    )
    trace_counts = dict(
        _of_subject(ContextTrace.objects.all(), subject)
        .filter(session__in=[r["session"] for r in rows])
        .values("session")
        .annotate(n=Count("id"))
        .values_list("session", "n")
    )
    for row in rows:
        row["hit_rate"] = hit_rate_of(row["used"], row["offered"])
        row["traces"] = trace_counts.get(row["session"], 0)
    return HitRates(
        overall=hit_rates(tenant=tenant, subject=subject),
        days=buckets,
        daily=[by_day.get(day) for day in buckets],
        conversations=rows,
        conversation_total=qs.values("session", "subject").distinct().count(),
    )


def backlogs(*, tenant: Tenant) -> dict[str, int]:
    """Work waiting: embeddings, unconsolidated episodes, facts to review, erasures not yet done."""

    watermark = ConsolidationWatermark.objects.first() or ConsolidationWatermark(tenant=tenant)
    return {
        "embedding": embedding_backlog(tenant=tenant),
        "consolidation": backlog_queryset(tenant, watermark).count(),
        "review": Fact.objects.filter(status=FactStatus.PENDING_REVIEW).count(),
        "erasure": erasures_in_progress(tenant=tenant),
        "open_sessions": Session.objects.filter(status=SessionStatus.OPEN).count(),
    }


def memory_totals(*, tenant: Tenant) -> dict[str, int]:

    facts = Fact.objects.aggregate(active=Count("id", filter=Q(status=FactStatus.ACTIVE)), all=Count("id"))
    return {
        "episodes": Episode.objects.count(),
        "sessions": Session.objects.count(),
        "facts_active": facts["active"],
        "facts_all": facts["all"],
        "procedures_active": Procedure.objects.filter(is_current=True, status=ProcedureStatus.ACTIVE).count(),
    }


def recent_subjects(*, tenant: Tenant, limit: int = 25) -> list[dict[str, Any]]:

    rows = (
        Session.objects.values("subject")
        .annotate(sessions=Count("id"), episode_total=Sum("episode_count"), last=Max("started_at"))
        .order_by("-last", "subject")[:limit]
    )
    return [
        {"subject": r["subject"], "sessions": r["sessions"], "episodes": r["episode_total"], "last": r["last"]}
        for r in rows
    ]


@dataclass
class SessionRow:
    session: Any
    episodes: list[Any]
    more: int
    # The first and last events of the conversation: a summary written when the session ended (at the
    # time of the end call, today for a seeded demo or an import) is not one.
    first_event: datetime | None = None
    last_event: datetime | None = None


def subject_timeline(*, tenant: Tenant, subject: str, sessions: int = SUBJECT_SESSIONS) -> list[SessionRow]:
    """The subject's latest sessions, newest first, each with its first episodes in time order and the
    times of its first and last events (two queries, whatever the number of sessions)."""

    rows = list(Session.objects.filter(subject=subject).order_by("-started_at", "-id")[:sessions])
    event_at = Case(When(~Q(kind=EpisodeKind.SUMMARY), then=F("occurred_at")))
    episodes = (
        Episode.objects.filter(session_id__in=[s.pk for s in rows])
        .defer("embedding", "search_vector", "payload")
        .annotate(
            rank=Window(RowNumber(), partition_by=F("session_id"), order_by=(F("occurred_at"), F("id"))),
            first_event=Window(Min(event_at), partition_by=F("session_id")),
            last_event=Window(Max(event_at), partition_by=F("session_id")),
        )
        .filter(rank__lte=EPISODES_PER_SESSION)
        .order_by("session_id", "occurred_at", "id")
    )
    by_session: dict[int, list[Any]] = {s.pk: [] for s in rows}
    for episode in episodes:
        by_session[episode.session_id].append(episode)

    def row(session: Session) -> SessionRow:
        shown = by_session[session.pk]
        first = shown[0].first_event if shown else None
        last = shown[0].last_event if shown else None
        return SessionRow(
            session=session,
            episodes=shown,
            more=max(0, session.episode_count - len(shown)),
            first_event=first or session.started_at,
            last_event=last or first or session.last_event_at or session.started_at,
        )

    return [row(s) for s in rows]


def subject_session_count(*, tenant: Tenant, subject: str) -> int:
    """All the subject's sessions, to say how many the timeline leaves out."""
    return Session.objects.filter(subject=subject).count()


@dataclass
class FactRow:
    fact: Any
    sources: list[Any]
    changes: int


def subject_facts(*, tenant: Tenant, subject: str) -> dict[str, list[FactRow]]:
    """The subject's current facts, those waiting for review and the latest past ones, each with its
    source episodes and the number of changes in its history (three queries in all, plus the lists)."""

    current = facts_for_subject(tenant=tenant, subject=subject)
    base = Fact.objects.filter(subject=subject).defer("embedding", "search_vector")
    pending = list(base.filter(status=FactStatus.PENDING_REVIEW).order_by("-recorded_at")[:PAST_FACTS])
    past = list(
        base.filter(status__in=[FactStatus.SUPERSEDED, FactStatus.EXPIRED, FactStatus.RETRACTED]).order_by(
            "-updated_at"
        )[:PAST_FACTS]
    )
    ids = [f.id for f in (*current, *pending, *past)]
    sources = fact_sources(tenant=tenant, fact_ids=ids)
    changes = dict(
        FactChange.objects.filter(fact_id__in=ids).values("fact_id").annotate(n=Count("id")).values_list("fact_id", "n")
    )

    def rows(facts: list[Any]) -> list[FactRow]:
        return [FactRow(fact=f, sources=sources.get(f.id, []), changes=changes.get(f.id, 0)) for f in facts]

    return {"current": rows(current), "pending": rows(pending), "past": rows(past)}


def stats_get(*, tenant: Tenant) -> dict[str, Any]:
    """GET /v1/stats: the router's hit rates and latency next to each layer's own figures."""
    now = timezone.now()
    episodic = episodic_stats(tenant=tenant)
    # The erasure figures sit beside consolidation's, where /v1/stats has always had them.
    consolidation = {
        **consolidation_stats(tenant=tenant),
        "erasure_requests": erasure_requests_by_status(tenant=tenant),
    }
    return {
        "generated_at": now.isoformat(),
        "memory": {
            "hit_rate": hit_rates(tenant=tenant),
            "hit_rate_7d": hit_rates(tenant=tenant, since=now - timedelta(days=7)),
            "by_subject": hit_rates_by(tenant=tenant, field="subject"),
            "by_session": hit_rates_by(tenant=tenant, field="session"),
        },
        "context": context_latency(tenant=tenant, since=now - timedelta(days=1)),
        "consolidation_ratio": consolidation["consolidation_ratio"],
        "backlogs": {
            "embedding": episodic.embedding_backlog,
            "embedding_oldest_created_at": episodic.oldest_pending_created_at,
            **consolidation["backlog"],
        },
        "episodic": {
            "episodes": episodic.episodes,
            "sessions": episodic.sessions,
            "open_sessions": episodic.open_sessions,
        },
        "procedural": dict(procedure_stats(tenant=tenant)),
        "consolidation": consolidation,
        "growth": {
            "facts_last_7d": Fact.objects.filter(recorded_at__gte=now - timedelta(days=7)).count(),
            "episodes_last_7d": Episode.objects.filter(created_at__gte=now - timedelta(days=7)).count(),
            "per_subject_week": consolidation["growth_per_subject_week"],
        },
    }

"""Consolidation: new episodes to facts, one tenant at a time, each episode once, safe to redeliver.

A run works in batches of the lowest unconsolidated episode ids. Each batch is one transaction that
takes the tenant's consolidation lock (a row lock, tenants.locks), locks the watermark row, extracts, merges every candidate through
`fact_upsert`, marks the episodes done and adds its counts to the run row. A worker killed mid-batch
leaves nothing of that batch behind; the redelivered task continues the same run (found by its Celery
task id) from the watermark, so nothing is skipped and nothing is merged twice.

Why the watermark carries `done_above` and a pending promotion: episode ids come from a sequence, so a
transaction still open can commit a lower id after a higher one was consolidated. Ids above
`last_episode_id` are therefore recorded one by one until PostgreSQL shows that every transaction of
this database that was running when they were done has ended: then no lower id can still appear.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from consolidation import metrics
from consolidation.aliases import aliases_learn
from consolidation.extractors.base import Extractor, ExtractorUnavailable, Usage, get_extractor
from consolidation.extractors.rules import RuleBasedExtractor
from consolidation.extractors.summary import extractive_summary
from consolidation.lifecycle import episodes_delete
from consolidation.models import ConsolidationRun, ConsolidationWatermark, RunStatus, RunTrigger
from core.errors import DomainError
from episodic.models import SESSION_SUMMARY_EXTERNAL_ID, Episode, EpisodeKind, Session, SessionStatus
from episodic.services import episodes_append, session_summary_set
from semantic import predicates
from semantic.models import ActorType, Fact, FactStatus
from semantic.services import embed_statements, fact_upsert, facts_expire_left
from semantic.types import Actor, FactCandidate, UpsertResult
from semantic.validation import fact_value_is_fragment
from tenants.locks import subject_lock, tenant_xact_lock
from tenants.models import Tenant
from tenants.scope import tenant_scope

logger = logging.getLogger(__name__)

BATCH_SIZE = 200
MAX_PROBLEMS_KEPT = 50
# What a consolidation run may keep of a problem: never an excerpt of what was read or answered.
PROBLEM_KEYS = frozenset({"error", "attempt", "episode_ids", "ids", "attribute", "subject_batch", "stop_reason"})


def scrub_problems(problems: list[Any]) -> list[dict[str, Any]]:
    """Problems without anything an extractor read or answered: the error and the figures stay."""
    return [
        {k: v for k, v in p.items() if k in PROBLEM_KEYS and not (k == "error" and not isinstance(v, str))}
        for p in problems
        if isinstance(p, dict)
    ]


def _running_xids() -> list[int]:
    """Transaction ids now in progress in this database, other than ours. The episode writers run as
    our own role, so their sessions are visible here."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT backend_xid::text::bigint FROM pg_stat_activity"
            " WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
        )
        return sorted(int(row[0]) for row in cursor.fetchall())


def run_start(
    *,
    tenant: Tenant,
    trigger: str,
    reason: str = "",
    subject: str = "",
    session_external_id: str = "",
    entity: str = "",
    task_id: str = "",
) -> ConsolidationRun:
    """The run of this task id (a redelivery continues it, counting the attempt) or a new one."""
    with tenant_scope(tenant):
        if task_id:
            existing = ConsolidationRun.objects.select_for_update().filter(task_id=task_id).first()
            if existing is not None:
                existing.attempts += 1
                existing.status = RunStatus.RUNNING
                existing.error = ""
                existing.save(update_fields=["attempts", "status", "error"])
                return existing
        return ConsolidationRun.objects.create(
            tenant=tenant,
            trigger=RunTrigger(trigger),
            reason=reason[:2000],
            subject=subject,
            session_external_id=session_external_id,
            entity=entity,
            task_id=task_id,
            extractor=get_extractor().name,
        )


def _watermark(tenant: Tenant) -> ConsolidationWatermark:
    ConsolidationWatermark.objects.get_or_create(tenant=tenant)
    return ConsolidationWatermark.objects.select_for_update().get()


def _promote(tenant: Tenant, wm: ConsolidationWatermark) -> None:
    """Fold `done_above` into `last_episode_id` once no lower id can still commit."""
    if wm.pending_last_id is None:
        return
    if wm.pending_xids and set(wm.pending_xids) & set(_running_xids()):
        return
    undone_below = (
        Episode.objects.filter(id__gt=wm.last_episode_id, id__lte=wm.pending_last_id)
        .exclude(id__in=wm.done_above)
        .exists()
    )
    if undone_below:
        return  # a late commit below the horizon: the next batch reads it first, then we promote
    wm.last_episode_id = max(wm.last_episode_id, wm.pending_last_id)
    wm.done_above = [i for i in wm.done_above if i > wm.last_episode_id]
    wm.pending_last_id = None
    wm.pending_xids = []


def backlog_queryset(tenant: Tenant, wm: ConsolidationWatermark) -> Any:
    qs = Episode.objects.filter(id__gt=wm.last_episode_id)
    if wm.done_above:
        qs = qs.exclude(id__in=wm.done_above)
    return qs


def _actor(run: ConsolidationRun) -> Actor:
    return Actor(type=ActorType.CONSOLIDATION, id=f"run:{run.pk}", reason=run.reason[:200] or run.trigger)


class _ReplacesNothing(Exception):
    """A latent candidate (ExtractionResult.updates_only) that superseded no fact: its write is undone."""


def _replaced_something(result: UpsertResult) -> bool:
    """A latent candidate stands where it replaced values the readers hold as statements of no named slot:
    a slot (employer, database, editor, ...) has readers and a timeline of its own. On the technical set,
    latent clauses that restated
    a slot the readers had already filled ("is on Ubuntu 24.04 now instead of macOS Sonoma") closed the
    speaker's employer, database and editor beside it."""
    if result.action not in {"created", "superseded"} or result.fact.status != FactStatus.ACTIVE:
        return False
    closed = set(Fact.objects.filter(superseded_by=result.fact).values_list("attribute", flat=True))
    return bool(closed) and closed <= predicates.GENERIC_ATTRIBUTES


def _merge(
    *,
    tenant: Tenant,
    run: ConsolidationRun,
    candidates: Sequence[FactCandidate],
    batch_ids: set[int],
    updates_only: bool = False,
) -> dict[str, int]:

    counts: dict[str, int] = defaultdict(int)
    actor = _actor(run)
    # Whatever the extractor, a value that cannot stand as a fact ("13)", "want") never becomes one.
    fragments = [c for c in candidates if fact_value_is_fragment(c.value)]
    for candidate in fragments:
        counts["rejected"] += 1
        _note_problem(run, {"error": "candidate value is a fragment", "attribute": candidate.attribute[:64]})
    candidates = [c for c in candidates if not fact_value_is_fragment(c.value)]
    vectors = embed_statements([" ".join(c.statement.split()) or "-" for c in candidates]) if candidates else []
    for candidate, vector in zip(candidates, vectors, strict=True):
        bad_sources = [i for i in candidate.source_episode_ids if i not in batch_ids]
        if bad_sources or not candidate.source_episode_ids:
            counts["rejected"] += 1
            _note_problem(run, {"error": "candidate cites episodes outside its batch", "ids": bad_sources[:10]})
            continue
        try:
            with transaction.atomic():
                result = fact_upsert(tenant=tenant, candidate=candidate, actor=actor, embedding=vector)
                if updates_only and not _replaced_something(result):
                    raise _ReplacesNothing
        except DomainError as exc:
            counts["rejected"] += 1
            _note_problem(run, {"error": f"fact_upsert refused a candidate: {exc.detail}"[:500]})
            continue
        except _ReplacesNothing:
            continue
        counts[result.action] += 1
    return counts


def _note_problem(run: ConsolidationRun, problem: dict[str, Any]) -> None:

    problems = list(run.problems or [])
    if len(problems) < MAX_PROBLEMS_KEPT:
        # Runs outlive the episodes they read: a problem keeps no excerpt of episodes or answers.
        problems += scrub_problems([problem])
        run.problems = problems


def consolidate_batch(*, tenant: Tenant, run: ConsolidationRun, extractor: Extractor, batch_size: int) -> int:
    """One batch in one transaction; the number of episodes it consolidated (0: nothing left)."""
    with tenant_scope(tenant):
        # One consolidation per tenant at a time; a second worker waits here for the batch to commit.
        tenant_xact_lock(tenant.id, "consolidation")
        wm = _watermark(tenant)
        _promote(tenant, wm)
        episodes = list(backlog_queryset(tenant, wm).order_by("id")[:batch_size])
        if not episodes:
            wm.updated_at = timezone.now()
            wm.save(update_fields=["last_episode_id", "done_above", "pending_last_id", "pending_xids", "updated_at"])
            return 0
        # The batch's subjects' slots, before any fact is written (tenants.locks): an erasure of one of
        # them runs wholly before or after the batch. One that ran while the batch was read took its
        # episodes: read again under the slots, they are gone (their ids still count as done).
        subject_lock(tenant.id, {e.subject for e in episodes})
        present = set(Episode.objects.filter(id__in=[e.id for e in episodes]).values_list("id", flat=True))
        by_subject: dict[str, list[Episode]] = defaultdict(list)
        for episode in episodes:
            if episode.id in present:
                by_subject[episode.subject].append(episode)
        usage = Usage()
        counts: dict[str, int] = defaultdict(int)
        batch_ids = {e.id for e in episodes}
        for subject, subject_episodes in by_subject.items():
            aliases_learn(tenant=tenant, subject=subject, episodes=subject_episodes, actor=_actor(run))
            result = extractor.extract(tenant=tenant, subject=subject, episodes=subject_episodes)
            usage.add(result.usage)
            for problem in result.problems:
                _note_problem(run, {"subject_batch": len(subject_episodes), **problem})
            counts["candidates"] += len(result.candidates)
            for key, value in _merge(tenant=tenant, run=run, candidates=result.candidates, batch_ids=batch_ids).items():
                counts[key] += value
            # After the readers' facts, so that only what they left open is closed by a latent reading.
            merged = _merge(
                tenant=tenant, run=run, candidates=result.updates_only, batch_ids=batch_ids, updates_only=True
            )
            for key, value in merged.items():
                counts[key] += value
            # After the merge, so that a fact said earlier in this batch is among those a later
            # statement leaves behind ("we moved from A to B" expires "the web app is built on A").
            for left in result.replacements:
                if left.source_episode_id in batch_ids and left.subject == subject:
                    facts_expire_left(
                        tenant=tenant,
                        subject=subject,
                        value=left.value,
                        version=left.version,
                        context=left.context,
                        before=left.observed_at,
                        source_episode_id=left.source_episode_id,
                        actor=_actor(run),
                    )

        ids = sorted(batch_ids)
        wm.done_above = sorted(set(wm.done_above) | set(ids))
        if wm.pending_last_id is None:
            # Taken after the batch was read: every transaction that took a lower id is either
            # committed (and was read), or still running now, and listed.
            wm.pending_last_id = max(wm.done_above)
            wm.pending_xids = _running_xids()
        wm.updated_at = timezone.now()
        wm.save(update_fields=["last_episode_id", "done_above", "pending_last_id", "pending_xids", "updated_at"])

        run.first_episode_id = min(run.first_episode_id or ids[0], ids[0])
        run.last_episode_id = max(run.last_episode_id or ids[-1], ids[-1])
        ConsolidationRun.objects.filter(pk=run.pk).update(
            episodes_read=F("episodes_read") + len(ids),
            candidates=F("candidates") + counts["candidates"],
            facts_created=F("facts_created") + counts["created"],
            facts_confirmed=F("facts_confirmed") + counts["confirmed"],
            facts_superseded=F("facts_superseded") + counts["superseded"],
            facts_pending=F("facts_pending") + counts["pending"],
            candidates_rejected=F("candidates_rejected") + counts["rejected"],
            llm_calls=F("llm_calls") + usage.llm_calls,
            input_tokens=F("input_tokens") + usage.input_tokens,
            output_tokens=F("output_tokens") + usage.output_tokens,
            cache_read_tokens=F("cache_read_tokens") + usage.cache_read_tokens,
            cost_usd=F("cost_usd") + usage.cost_usd,
            first_episode_id=run.first_episode_id,
            last_episode_id=run.last_episode_id,
            problems=run.problems,
        )
        return len(ids)


def consolidate(
    *, tenant: Tenant, run: ConsolidationRun, batch_size: int = BATCH_SIZE, max_batches: int | None = None
) -> ConsolidationRun:
    """Consolidate the tenant's backlog into facts under `run`, then close the run."""
    extractor = get_extractor()
    batches = 0
    try:
        while max_batches is None or batches < max_batches:
            if consolidate_batch(tenant=tenant, run=run, extractor=extractor, batch_size=batch_size) == 0:
                break
            batches += 1
    except ExtractorUnavailable as exc:
        # The failed batch rolled back whole: its episodes stay in the backlog for the next run.
        return run_finish(tenant=tenant, run=run, status=RunStatus.FAILED, error=str(exc)[:4000])
    except Exception as exc:
        run_finish(tenant=tenant, run=run, status=RunStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:4000])
        raise
    return run_finish(tenant=tenant, run=run, status=RunStatus.SUCCEEDED)


def run_finish(*, tenant: Tenant, run: ConsolidationRun, status: str, error: str = "") -> ConsolidationRun:
    with tenant_scope(tenant):
        fresh = ConsolidationRun.objects.select_for_update().get(pk=run.pk)
        fresh.status = status
        fresh.error = error
        fresh.finished_at = timezone.now()
        fresh.duration_ms = int((fresh.finished_at - fresh.started_at).total_seconds() * 1000)
        fresh.save(update_fields=["status", "error", "finished_at", "duration_ms"])
    _observe(fresh)
    return fresh


def _observe(run: ConsolidationRun) -> None:
    metrics.RUNS.labels(run.trigger, run.status).inc()
    metrics.RUN_SECONDS.observe((run.duration_ms or 0) / 1000)
    metrics.EPISODES.inc(run.episodes_read)
    for action, n in (
        ("created", run.facts_created),
        ("confirmed", run.facts_confirmed),
        ("superseded", run.facts_superseded),
        ("pending", run.facts_pending),
        ("rejected", run.candidates_rejected),
    ):
        metrics.FACTS.labels(action).inc(n)
    if run.llm_calls:
        metrics.LLM_CALLS.labels(run.extractor).inc(run.llm_calls)
        metrics.LLM_TOKENS.labels(run.extractor, "input").inc(run.input_tokens)
        metrics.LLM_TOKENS.labels(run.extractor, "output").inc(run.output_tokens)
        metrics.LLM_COST.labels(run.extractor).inc(run.cost_usd)


SUMMARY_EXTERNAL_ID = SESSION_SUMMARY_EXTERNAL_ID


def session_summarise(*, tenant: Tenant, session_id: int, run: ConsolidationRun | None = None) -> Episode | None:
    """Store the summary of an ended session as a `summary` episode, once (its external id is fixed)."""
    with tenant_scope(tenant):
        session = Session.objects.filter(pk=session_id).first()
        if session is None or session.status == SessionStatus.OPEN:
            return None
        episodes = list(Episode.objects.filter(session=session).order_by("occurred_at", "id"))
        # Only this service's own summary counts: working notes summarised at session end are also
        # `summary` episodes, and they are input here, not a reason to skip.
        written = next((e for e in episodes if e.external_id == SUMMARY_EXTERNAL_ID), None)
        if written is not None:
            # A summary stored before sessions carried it (or a retry after a crash in between).
            if session.summary != written.content:
                session_summary_set(tenant=tenant, session_id=session.pk, summary=written.content)
            return None
        if not episodes:
            return None
        extractor = get_extractor()
        result = extractor.summarise(tenant=tenant, subject=session.subject, episodes=episodes)
        if not result.text.strip():
            return None
        summary = _summary_append(
            tenant=tenant,
            session=session,
            text=result.text,
            sources=episodes,
            occurred_at=session.ended_at or episodes[-1].occurred_at,
            summariser=extractor.name,
        )
        if run is not None:
            ConsolidationRun.objects.filter(pk=run.pk).update(
                summaries_written=F("summaries_written") + 1,
                llm_calls=F("llm_calls") + result.usage.llm_calls,
                input_tokens=F("input_tokens") + result.usage.input_tokens,
                output_tokens=F("output_tokens") + result.usage.output_tokens,
                cost_usd=F("cost_usd") + result.usage.cost_usd,
            )
        return summary


def _summary_append(
    *, tenant: Tenant, session: Session, text: str, sources: list[Episode], occurred_at: datetime, summariser: str
) -> Episode:
    [summary] = episodes_append(
        tenant=tenant,
        items=[
            {
                "subject": session.subject,
                "session": session.external_id,
                "agent": session.agent,
                "kind": EpisodeKind.SUMMARY,
                "role": "system",
                "content": text,
                "occurred_at": occurred_at,
                "external_id": SUMMARY_EXTERNAL_ID,
                "payload": {
                    "source_episode_ids": [e.id for e in sources],
                    "generated_by": "consolidation",
                    "summariser": summariser,
                },
            }
        ],
    )
    session_summary_set(tenant=tenant, session_id=session.pk, summary=text)
    return summary


class SummaryRebuild(StrEnum):
    REWRITTEN = "rewritten"
    REMOVED = "removed"
    UNCHANGED = "unchanged"
    KEPT = "kept"  # written by a model: rebuilding would call it again, and not reproducibly
    MISSING = "missing"


def session_summary_rebuild(*, tenant: Tenant, session_id: int) -> SummaryRebuild:
    """Rewrite a stored offline summary with the current summariser (consolidation.extractors.summary).

    The summary episode is the consolidator's derived output, not an event: when the new text differs
    it is replaced (deleted with its passages through lifecycle.episodes_delete, then appended again
    under the same external id) and the session's summary follows; when the session has nothing to
    summarise, both go. Idempotent: a second pass finds every summary unchanged."""
    with tenant_scope(tenant), transaction.atomic():
        session = Session.objects.select_for_update().filter(pk=session_id).first()
        if session is None:
            return SummaryRebuild.MISSING
        episodes = list(Episode.objects.filter(session=session).order_by("occurred_at", "id"))
        written = next((e for e in episodes if e.external_id == SUMMARY_EXTERNAL_ID), None)
        if written is None:
            return SummaryRebuild.MISSING
        if written.payload.get("summariser", RuleBasedExtractor.name) != RuleBasedExtractor.name:
            return SummaryRebuild.KEPT
        sources = [e for e in episodes if e.pk != written.pk]
        text = extractive_summary(sources)
        if text == written.content:
            if session.summary != text:
                session_summary_set(tenant=tenant, session_id=session.pk, summary=text)
            return SummaryRebuild.UNCHANGED
        episodes_delete(tenant=tenant, episode_ids=[written.pk])
        if not text:
            session_summary_set(tenant=tenant, session_id=session.pk, summary="")
            return SummaryRebuild.REMOVED
        _summary_append(
            tenant=tenant,
            session=session,
            text=text,
            sources=sources,
            occurred_at=written.occurred_at,
            summariser=RuleBasedExtractor.name,
        )
        return SummaryRebuild.REWRITTEN


def entity_trigger(*, tenant: Tenant) -> tuple[str, str] | None:
    """(subject, entity) when `entity_trigger_episodes` or more episodes of one subject in the last
    `entity_trigger_window_days` share an entity and at least one of them awaits consolidation."""
    config = tenant.config
    since = timezone.now() - timedelta(days=config.entity_trigger_window_days)
    with tenant_scope(tenant):
        wm = ConsolidationWatermark.objects.first()
        last = wm.last_episode_id if wm else 0
        done = list(wm.done_above) if wm else []
        with connection.cursor() as cursor:
            cursor.execute(
                """
                SELECT e.subject, x.entity, count(*) AS n
                FROM episodic_episode e CROSS JOIN LATERAL unnest(e.entities) AS x(entity)
                WHERE e.tenant_id = %s AND e.occurred_at >= %s
                GROUP BY e.subject, x.entity
                HAVING count(*) >= %s
                   AND bool_or(e.id > %s AND NOT (e.id = ANY(%s::bigint[])))
                ORDER BY n DESC, e.subject, x.entity
                LIMIT 1
                """,
                [tenant.id, since, config.entity_trigger_episodes, last, done],
            )
            row = cursor.fetchone()
    return (row[0], row[1]) if row else None


def backlog_size(*, tenant: Tenant) -> int:
    with tenant_scope(tenant):
        wm = ConsolidationWatermark.objects.first()
        if wm is None:
            return int(Episode.objects.count())
        return int(backlog_queryset(tenant, wm).count())


def oldest_backlog_at(*, tenant: Tenant) -> datetime | None:
    with tenant_scope(tenant):
        wm = ConsolidationWatermark.objects.first()
        qs = backlog_queryset(tenant, wm) if wm else Episode.objects.all()
        first = qs.order_by("id").values_list("created_at", flat=True).first()
    return first


def sweep_decision(*, tenant: Tenant, now: datetime | None = None) -> tuple[str, str, str, str] | None:
    """Whether the sweep should consolidate this tenant now: (trigger, reason, subject, entity)."""
    now = now or timezone.now()
    hit = entity_trigger(tenant=tenant)
    if hit is not None:
        subject, entity = hit
        config = tenant.config
        return (
            RunTrigger.ENTITY_THRESHOLD,
            f"{config.entity_trigger_episodes}+ episodes of subject {subject} in {config.entity_trigger_window_days}"
            f" days mention {entity}",
            subject,
            entity,
        )
    oldest = oldest_backlog_at(tenant=tenant)
    max_delay = timedelta(minutes=tenant.config.consolidation_max_delay_minutes)
    if oldest is not None and now - oldest >= max_delay:
        return (RunTrigger.SWEEP, f"backlog older than {max_delay}", "", "")
    return None

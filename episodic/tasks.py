"""Background work of episodic memory: the embedding backlog and the scratchpad expiry sweep.

Suggested schedules (consolidation's setup_schedules stores them): `embed_backlog` every 30 s,
`sweep_expired_scratchpads` every 60 s.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from celery import shared_task
from django.db import connection
from django.db.models import Q, QuerySet

from episodic.models import Episode, Passage
from episodic.passages import (
    WITHOUT_SENTENCES,
    episodes_finish_embedding,
    passages_create,
    passages_embed,
    passages_sentences_embed,
    passages_without_sentences,
)
from episodic.scratchpad import scratchpads_sweep_expired
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.tasks import TenantTask

logger = logging.getLogger(__name__)

EMBED_BATCH = 64
# One task run embeds at most this many batches, then hands the rest to a fresh task, so that a big
# backlog never holds a worker past the time limit and other tenants get their turn.
MAX_BATCHES_PER_RUN = 40


@dataclass
class DrainReport:
    embedded: int = 0
    batches: int = 0
    batch_seconds: list[float] = field(default_factory=list)
    remaining: bool = False
    episodes: int = 0
    sentences: int = 0  # passages given their sentences after they were embedded


_WITHOUT_PASSAGES_SQL = """
SELECT e.id FROM episodic_episode e
WHERE e.tenant_id = %s AND e.embedding IS NULL
  AND NOT EXISTS (SELECT 1 FROM episodic_passage p WHERE p.tenant_id = e.tenant_id AND p.episode_id = e.id)
ORDER BY e.id LIMIT %s
"""

_UNFINISHED_SQL = """
SELECT e.id FROM episodic_episode e
WHERE e.tenant_id = %s AND e.embedding IS NULL
ORDER BY e.id LIMIT %s
"""


def _ensure_passages(tenant: Tenant, limit: int) -> int:
    """Passages for backlog episodes stored before passages existed (or by a writer that skipped them);
    how many episodes got theirs."""
    with connection.cursor() as cursor:
        cursor.execute(_WITHOUT_PASSAGES_SQL, [tenant.id, limit])
        ids = [row[0] for row in cursor.fetchall()]
    if ids:
        passages_create(tenant=tenant, episodes=list(Episode.objects.filter(id__in=ids)))
    return len(ids)


def embed_pending(
    *, tenant: Tenant, batch_size: int = EMBED_BATCH, max_batches: int = MAX_BATCHES_PER_RUN
) -> DrainReport:
    """Embed up to max_batches batches of the tenant's passages that have no embedding yet, and give
    each episode whose passages are all embedded its vector. `embedded` counts passages."""
    report = DrainReport()
    for _ in range(max_batches):
        started = time.perf_counter()
        with tenant_scope(tenant):
            # Claim the batch: SKIP LOCKED lets two workers drain one tenant without doing a row twice.
            batch = list(
                Passage.objects.filter(embedding__isnull=True)
                .order_by("id")
                .select_for_update(skip_locked=True)
                .only("id", "episode_id", "content")[:batch_size]
            )
            if not batch:
                if _ensure_passages(tenant, batch_size):
                    continue
                if looked := _claim_sentences(tenant, batch_size):
                    passages_sentences_embed(tenant=tenant, passages=looked)
                    report.sentences += len(looked)
                    report.batches += 1
                    report.batch_seconds.append(time.perf_counter() - started)
                    continue
                with connection.cursor() as cursor:
                    cursor.execute(_UNFINISHED_SQL, [tenant.id, batch_size])
                    episode_ids = [row[0] for row in cursor.fetchall()]
                report.episodes += episodes_finish_embedding(tenant=tenant, episode_ids=episode_ids)
                return report
            passages_embed(tenant=tenant, passages=batch)
        report.embedded += len(batch)
        report.batches += 1
        report.batch_seconds.append(time.perf_counter() - started)
        if len(batch) < batch_size:
            with tenant_scope(tenant):
                report.remaining = passages_waiting(tenant).exists()
            return report
    with tenant_scope(tenant):
        report.remaining = passages_waiting(tenant).exists()
    return report


def passages_waiting(tenant: Tenant) -> QuerySet[Passage]:
    """The tenant's passages the drain has work for (call inside its scope): no vector yet, or, where the
    tenant keeps sentence vectors, their sentences not looked at yet."""
    waiting = Q(embedding__isnull=True)
    if tenant.keeps_sentence_vectors:
        waiting |= WITHOUT_SENTENCES
    return Passage.objects.filter(waiting)


def _claim_sentences(tenant: Tenant, batch_size: int) -> list[Passage]:
    """A batch of the tenant's embedded passages not looked at for sentences, where it keeps them (it
    started exploring or got a value model after they were written); SKIP LOCKED, as the embedding's."""
    if not tenant.keeps_sentence_vectors:
        return []
    return list(
        passages_without_sentences()
        .order_by("id")
        .select_for_update(skip_locked=True)
        .only("id", "episode_id", "content")[:batch_size]
    )


@shared_task(base=TenantTask, name="episodic.tasks.embed_backlog_for_tenant")
def embed_backlog_for_tenant(tenant: Tenant) -> int:
    report = embed_pending(tenant=tenant)
    if report.remaining:
        embed_backlog_for_tenant.delay(str(tenant.id))
    logger.info(
        "embedded %s passages (and the sentences of %s embedded before) of tenant %s in %s batches",
        report.embedded,
        report.sentences,
        tenant.slug,
        report.batches,
    )
    return report.embedded


def tenants_with_backlog() -> list[str]:
    """Ids of active tenants with episodes or passages waiting for an embedding, or (where the tenant keeps
    them) passages waiting for their sentences' vectors: one query each in a scope over all of them,
    answered by the partial backlog indexes."""
    tenants = list(Tenant.objects.filter(active=True))
    ids = [t.id for t in tenants]
    if not ids:
        return []
    keeping = [t.id for t in tenants if t.keeps_sentence_vectors]
    with tenant_scope(*ids):
        pending = set(
            Episode.objects.filter(Q(tenant_id__in=ids) & Q(embedding__isnull=True))
            .values_list("tenant_id", flat=True)
            .distinct()
        ) | set(
            Passage.objects.filter(Q(tenant_id__in=ids) & Q(embedding__isnull=True))
            .values_list("tenant_id", flat=True)
            .distinct()
        )
        if keeping:
            pending |= set(
                Passage.objects.filter(Q(tenant_id__in=keeping) & WITHOUT_SENTENCES)
                .values_list("tenant_id", flat=True)
                .distinct()
            )
        return sorted(str(t) for t in pending)


@shared_task(name="episodic.tasks.embed_backlog")
def embed_backlog() -> int:
    """Fan out one embedding task per tenant that has a backlog. Returns how many were enqueued."""
    pending = tenants_with_backlog()
    for tenant_id in pending:
        embed_backlog_for_tenant.delay(tenant_id)
    return len(pending)


@shared_task(name="episodic.tasks.sweep_expired_scratchpads")
def sweep_expired_scratchpads() -> dict[str, int]:
    """Turn expired scratchpads into summary episodes."""
    counts = scratchpads_sweep_expired()
    if any(counts.values()):
        logger.info("scratchpad sweep: %s", counts)
    return counts

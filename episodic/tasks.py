"""Background work of episodic memory: the embedding backlog and the scratchpad expiry sweep.

Suggested schedules (consolidation's setup_schedules stores them): `embed_backlog` every 30 s,
`sweep_expired_scratchpads` every 60 s.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field

from celery import shared_task
from django.db.models import Q

from core.embedding import get_embedder
from episodic.models import Episode
from episodic.scratchpad import scratchpads_sweep_expired
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.tasks import TenantTask

logger = logging.getLogger(__name__)

EMBED_BATCH = 64
# One task run embeds at most this many batches, then hands the rest to a fresh task, so that a big
# backlog never holds a worker past the time limit and other tenants get their turn.
MAX_BATCHES_PER_RUN = 40
EMBED_TEXT_CHARS = 2000


def embedding_text(episode: Episode) -> str:
    """What an episode's vector stands for: its content, or for a bare tool event its payload."""
    if episode.content.strip():
        return episode.content[:EMBED_TEXT_CHARS]
    return f"{episode.kind} {json.dumps(episode.payload, sort_keys=True, default=str)}"[:EMBED_TEXT_CHARS]


@dataclass
class DrainReport:
    embedded: int = 0
    batches: int = 0
    batch_seconds: list[float] = field(default_factory=list)
    remaining: bool = False


def embed_pending(
    *, tenant: Tenant, batch_size: int = EMBED_BATCH, max_batches: int = MAX_BATCHES_PER_RUN
) -> DrainReport:
    """Embed up to max_batches batches of the tenant's episodes that have no embedding yet."""
    embedder = get_embedder()
    report = DrainReport()
    for _ in range(max_batches):
        started = time.perf_counter()
        with tenant_scope(tenant):
            # Claim the batch: SKIP LOCKED lets two workers drain one tenant without doing a row twice.
            batch = list(
                Episode.objects.for_tenant(tenant)
                .filter(embedding__isnull=True)
                .order_by("id")
                .select_for_update(skip_locked=True)
                .only("id", "kind", "content", "payload")[:batch_size]
            )
            if not batch:
                return report
            vectors = embedder.embed([embedding_text(e) for e in batch])
            for episode, vector in zip(batch, vectors, strict=True):
                episode.embedding = vector.tolist()
            Episode.objects.bulk_update(batch, ["embedding"])
        report.embedded += len(batch)
        report.batches += 1
        report.batch_seconds.append(time.perf_counter() - started)
        if len(batch) < batch_size:
            return report
    with tenant_scope(tenant):
        report.remaining = Episode.objects.for_tenant(tenant).filter(embedding__isnull=True).exists()
    return report


@shared_task(base=TenantTask, name="episodic.tasks.embed_backlog_for_tenant")
def embed_backlog_for_tenant(tenant: Tenant) -> int:
    report = embed_pending(tenant=tenant)
    if report.remaining:
        embed_backlog_for_tenant.delay(str(tenant.id))
    logger.info("embedded %s episodes of tenant %s in %s batches", report.embedded, tenant.slug, report.batches)
    return report.embedded


def tenants_with_backlog() -> list[str]:
    """Ids of active tenants with episodes waiting for an embedding: one query in a scope over all of
    them, answered by the partial backlog index."""
    ids = list(Tenant.objects.filter(active=True).values_list("id", flat=True))
    if not ids:
        return []
    with tenant_scope(*ids):
        rows = (
            Episode.objects.filter(Q(tenant_id__in=ids) & Q(embedding__isnull=True))
            .values_list("tenant_id", flat=True)
            .distinct()
        )
        return sorted(str(t) for t in rows)


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

"""The real write path of an evaluation: what a client and the worker do, in process.

Each session's episodes go through `POST /v1/episodes` (in batches, in the order they were said), the
session is ended with `POST /v1/sessions/{id}/end`, and the work the worker would do runs to completion
before any question is asked: the consolidation that ending a session enqueues (summary, extraction,
merge) runs eagerly in the request, as Celery's eager mode runs a task; then the tenant's consolidation
backlog and embedding backlog are drained the way the worker's tasks drain them, until nothing is left.

Without consolidation (`consolidate=False`, labelled as such wherever it is reported), the sessions are
left open, as the evaluation did before: episodes and their vectors only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote

from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from consolidation import services as consolidation_services
from consolidation.models import ConsolidationRun, RunStatus, RunTrigger
from consolidation.tasks import consolidate_session, consolidate_tenant
from episodic.models import Episode, EpisodeKind, Session, SessionStatus
from episodic.tasks import embed_pending, passages_waiting
from semantic.models import Fact, FactStatus
from tenants.models import ApiKey, Tenant
from tenants.scope import tenant_scope
from tenants.services import api_key_create

# A session's episodes as items of POST /v1/episodes, in the order they were said.
SessionItems = tuple[str, list[dict[str, Any]]]


@dataclass
class WriteReport:
    """What the write path did, and the state of memory when the questions start."""

    consolidation: bool
    sessions: int = 0
    sessions_written: int = 0
    episodes_posted: int = 0
    sessions_ended: int = 0
    write_seconds: float = 0.0
    drain_seconds: float = 0.0
    # Measured after the drain, before the first question.
    episodes: int = 0
    facts: int = 0
    summaries: int = 0
    open_sessions: int = 0
    consolidation_backlog: int = 0
    embedding_backlog: int = 0
    runs_failed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def sessions_of(items: Iterable[dict[str, Any]]) -> list[SessionItems]:
    """Items grouped by session, sessions in the order of their first item."""
    out: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        out.setdefault(str(item["session"]), []).append(item)
    return list(out.items())


@contextmanager
def worker_in_process() -> Iterator[None]:
    """Celery tasks enqueued meanwhile run at once, in this process, and their errors propagate: the
    consolidation that ending a session enqueues is done when the request returns."""
    conf = consolidate_session.app.conf
    before = conf.task_always_eager, conf.task_eager_propagates
    conf.task_always_eager, conf.task_eager_propagates = True, True
    try:
        yield
    finally:
        conf.task_always_eager, conf.task_eager_propagates = before


class SetMismatch(RuntimeError):
    """A reused tenant was written from another version of the set than the one to be asked."""


def conversations_write(
    *,
    tenant: Tenant,
    sessions: Sequence[SessionItems],
    consolidate: bool = True,
    progress: Callable[[str], None] | None = None,
) -> WriteReport:
    """Write every session through the API and end it (unless `consolidate` is False), then drain the
    consolidation and embedding backlogs. A session already ended is skipped, and episodes already
    stored are not posted again, so an interrupted run resumes. A turn id already stored with other text
    raises SetMismatch: the questions would be scored against turns the tenant does not hold."""
    report = WriteReport(consolidation=consolidate, sessions=len(sessions))
    issued = api_key_create(tenant=tenant, name="memory_eval write path", scopes=("read", "write"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    started = time.perf_counter()
    try:
        with worker_in_process():
            for number, (session, items) in enumerate(sessions, start=1):
                _session_write(client, tenant, session, items, consolidate=consolidate, report=report)
                if progress and (number % 50 == 0 or number == len(sessions)):
                    progress(
                        f"write path: {number}/{len(sessions)} sessions, {report.episodes_posted} episodes posted, "
                        f"{report.sessions_ended} ended, {time.perf_counter() - started:.0f}s"
                    )
            report.write_seconds = time.perf_counter() - started
            started = time.perf_counter()
            backlogs_drain(tenant=tenant, consolidate=consolidate, progress=progress)
            report.drain_seconds = time.perf_counter() - started
    finally:
        with tenant_scope(tenant):
            ApiKey.objects.filter(id=issued.api_key.id).update(revoked_at=timezone.now())
    _measure(tenant, report)
    return report


def _session_write(
    client: APIClient,
    tenant: Tenant,
    session: str,
    items: list[dict[str, Any]],
    *,
    consolidate: bool,
    report: WriteReport,
) -> None:
    with tenant_scope(tenant):
        stored = Session.objects.filter(external_id=session).first()
        known = (
            dict(Episode.objects.filter(session=stored).exclude(external_id="").values_list("external_id", "content"))
            if stored is not None
            else {}
        )
    changed = [
        i["external_id"] for i in items if i.get("external_id") in known and known[i["external_id"]] != i["content"]
    ]
    if changed:
        raise SetMismatch(
            f"The tenant holds another version of the set: session {session!r} has other text under "
            f"{len(changed)} of its turn ids (first {changed[0]!r}). Write this version to a fresh database."
        )
    if stored is not None and stored.status != SessionStatus.OPEN:
        return
    missing = [i for i in items if not i.get("external_id") or i["external_id"] not in known]
    batch = settings.ENGRAM["MAX_BATCH"]
    for start in range(0, len(missing), batch):
        response = client.post("/v1/episodes", {"episodes": missing[start : start + batch]}, format="json")
        if response.status_code != 201:
            raise RuntimeError(f"POST /v1/episodes answered {response.status_code}: {response.content[:300]!r}")
        report.episodes_posted += response.json()["count"]
    report.sessions_written += bool(missing)
    if consolidate:
        response = client.post(f"/v1/sessions/{quote(session, safe='')}/end", {}, format="json")
        if response.status_code != 200:
            raise RuntimeError(f"POST /v1/sessions/…/end answered {response.status_code}: {response.content[:300]!r}")
        report.sessions_ended += 1


def backlogs_drain(
    *,
    tenant: Tenant,
    consolidate: bool = True,
    max_rounds: int = 10_000,
    progress: Callable[[str], None] | None = None,
) -> None:
    """Run what the worker runs until nothing is left: consolidation of the tenant's backlog (the sweep's
    task), then the embedding backlog (passages, then the episodes' vectors; summaries included; and the
    sentences of passages written before, for a tenant that keeps sentence vectors).
    `progress` hears the embedding backlog's size against its size at the start, with a rate and an ETA."""
    tenant_id = str(tenant.id)
    if consolidate:
        for _ in range(max_rounds):
            left = consolidation_services.backlog_size(tenant=tenant)
            if not left:
                break
            consolidate_tenant.apply(args=(tenant_id, RunTrigger.SWEEP, "memory_eval: the backlog drained"), throw=True)
            if consolidation_services.backlog_size(tenant=tenant) >= left:
                raise RuntimeError(f"consolidation does not shrink the backlog ({left} episodes)")
    total = _embedding_backlog(tenant)
    started = time.perf_counter()
    for _ in range(max_rounds):
        done = embed_pending(tenant=tenant, max_batches=40)
        left = _embedding_backlog(tenant)
        if progress and total:
            elapsed = time.perf_counter() - started
            rate = (total - left) / elapsed if elapsed > 0 else 0.0
            eta = f", about {left / rate:.0f}s left" if rate > 0 and left else ""
            progress(f"embedding backlog: {total - left}/{total} embedded, {rate:.0f}/s{eta}")
        if not done.embedded and not done.episodes and not done.sentences and not left:
            break


def _embedding_backlog(tenant: Tenant) -> int:
    with tenant_scope(tenant):
        return passages_waiting(tenant).count() + Episode.objects.filter(embedding__isnull=True).count()


def _measure(tenant: Tenant, report: WriteReport) -> None:
    with tenant_scope(tenant):
        report.episodes = Episode.objects.count()
        report.summaries = Episode.objects.filter(kind=EpisodeKind.SUMMARY).count()
        report.facts = Fact.objects.filter(status=FactStatus.ACTIVE).count()
        report.open_sessions = Session.objects.filter(status=SessionStatus.OPEN).count()
        report.runs_failed = ConsolidationRun.objects.filter(status=RunStatus.FAILED).count()
    report.consolidation_backlog = consolidation_services.backlog_size(tenant=tenant) if report.consolidation else 0
    report.embedding_backlog = _embedding_backlog(tenant)

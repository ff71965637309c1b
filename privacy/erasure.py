"""Erasure (GDPR article 17): the registry of every place that holds subject data, and its executor.

Each `Location` knows how to count, export and erase one subject's data in one place. The executor
erases location by location inside one transaction per request, then verifies that every location
counts zero for the subject and stores the counts and a receipt. The request keeps the subject id only
until it is done; the audit keeps `subject_hash`.

A test (tests/privacy/test_erasure.py) fails when a model with a `tenant` or `subject` field is
neither a location here nor listed in NO_SUBJECT_DATA with the reason why.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.apps import apps
from django.db import models
from django.db.models import Q
from django.utils import timezone

from consolidation.lifecycle import episodes_delete, iter_archive_rows, read_archive, write_archive
from consolidation.models import ArchiveManifest, ConsolidationRun
from consolidation.services import scrub_problems
from episodic.aliases import learned_aliases_q
from episodic.models import allow_episode_deletion
from episodic.scratchpad import scratchpad_get, scratchpads_erase, scratchpads_held
from privacy.models import ErasureRequest, ErasureStatus
from semantic.selectors import subject_facts_q
from tenants.locks import subject_lock, tenant_xact_lock
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tenants.services import idempotency_records_erase

logger = logging.getLogger(__name__)

# What a failed erasure tells its operators; what failed goes to the log, never a database's text
# (which can quote rows) to the request.
ERASURE_FAILED = "The erasure failed and will be retried; the service's log has the details."
MAX_ERASURE_ATTEMPTS = 5


def subject_hash(tenant: Tenant, subject: str) -> str:
    return hashlib.sha256(f"{tenant.id}:{subject}".encode()).hexdigest()


@dataclasses.dataclass
class Plan:
    """What belongs to the subject, computed once before anything is erased."""

    tenant: Tenant
    subject: str
    session_ids: list[int]
    session_external_ids: list[str]
    episode_ids: list[int]
    fact_ids: list[Any]


def _model(label: str) -> type[models.Model] | None:
    try:
        return apps.get_model(label)
    except LookupError:
        return None


def serialise(row: models.Model) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in row._meta.concrete_fields:
        if field.name in {"embedding", "search_vector", "trigger_embedding"}:
            continue
        value = getattr(row, field.attname)
        if hasattr(value, "isoformat"):
            value = value.isoformat()
        elif value is not None and not isinstance(value, str | int | float | bool | list | dict):
            value = str(value)
        out[field.attname] = value
    return out


@dataclasses.dataclass(frozen=True)
class Location:
    name: str
    model: str | None
    describe: str
    queryset: Callable[[Plan], Any] | None = None
    count_fn: Callable[[Plan], int] | None = None
    erase_fn: Callable[[Plan], int] | None = None
    export_fn: Callable[[Plan], Iterable[dict[str, Any]]] | None = None

    def available(self) -> bool:
        return self.model is None or _model(self.model) is not None

    def count(self, plan: Plan) -> int:
        if self.count_fn is not None:
            return self.count_fn(plan)
        assert self.queryset is not None
        return int(self.queryset(plan).count())

    def erase(self, plan: Plan) -> int:
        if self.erase_fn is not None:
            return self.erase_fn(plan)
        assert self.queryset is not None
        deleted, _ = self.queryset(plan).delete()
        return int(deleted)

    def export(self, plan: Plan) -> Iterator[dict[str, Any]]:
        if self.export_fn is not None:
            yield from self.export_fn(plan)
            return
        if self.queryset is not None:
            for row in self.queryset(plan).order_by("pk").iterator(chunk_size=500):
                yield serialise(row)


def _qs(label: str, plan: Plan) -> Any:
    model = _model(label)
    assert model is not None
    return model.objects.all()  # type: ignore[attr-defined]


# --- special locations ---------------------------------------------------------------------------


def _facts_q(plan: Plan) -> Any:
    return _qs("semantic.Fact", plan).filter(id__in=plan.fact_ids)


def _facts_erase(plan: Plan) -> int:
    # Surviving facts and changes that point at an erased fact keep their row without the pointer.
    _qs("semantic.Fact", plan).filter(superseded_by_id__in=plan.fact_ids).update(superseded_by=None)
    _qs("semantic.FactChange", plan).filter(related_fact_id__in=plan.fact_ids).update(related_fact=None)
    deleted, _ = _facts_q(plan).delete()
    return int(deleted)


def _context_traces_erase(plan: Plan) -> int:
    traces = _qs("router.ContextTrace", plan).filter(subject=plan.subject)
    _qs("router.ContextFeedback", plan).filter(trace_id__in=traces.values("id")).delete()
    deleted, _ = traces.delete()
    return int(deleted)


def _episodes_erase(plan: Plan) -> int:
    ids = _qs("episodic.Episode", plan).filter(Q(subject=plan.subject) | Q(id__in=plan.episode_ids))
    return episodes_delete(tenant=plan.tenant, episode_ids=list(ids.values_list("id", flat=True)))


def _passages_q(plan: Plan) -> Any:
    return _qs("episodic.Passage", plan).filter(Q(subject=plan.subject) | Q(episode_id__in=plan.episode_ids))


def _erased_as_eraser(qs: Any) -> int:
    """Delete what only erasure and archiving may delete (episodes' derived rows); how many went."""
    count = int(qs.count())
    with allow_episode_deletion():
        qs.delete()
    return count


def _passages_erase(plan: Plan) -> int:
    return _erased_as_eraser(_passages_q(plan))


def _passage_sentences_q(plan: Plan) -> Any:
    return _qs("episodic.PassageSentence", plan).filter(Q(subject=plan.subject) | Q(episode_id__in=plan.episode_ids))


def _passage_sentences_erase(plan: Plan) -> int:
    return _erased_as_eraser(_passage_sentences_q(plan))


def _sessions_erase(plan: Plan) -> int:
    sessions = _qs("episodic.Session", plan).filter(subject=plan.subject)
    session_ids = list(sessions.values_list("id", flat=True))
    with allow_episode_deletion():
        # Another subject's episodes in this subject's session keep their session, renamed.
        shared_ids = set(
            _qs("episodic.Episode", plan)
            .filter(session_id__in=session_ids)
            .values_list("session_id", flat=True)
            .distinct()
        )
        if shared_ids:
            _qs("episodic.Session", plan).filter(id__in=shared_ids).update(subject="", summary="")
        gone = [i for i in session_ids if i not in shared_ids]
        _qs("episodic.PassageSentence", plan).filter(
            passage_id__in=_qs("episodic.Passage", plan).filter(session_id__in=gone).values("id")
        ).delete()
        _qs("episodic.Passage", plan).filter(session_id__in=gone).delete()
        _qs("episodic.Session", plan).filter(id__in=gone).delete()
    return len(session_ids)


def _fact_changes_q(plan: Plan) -> Any:
    return _qs("semantic.FactChange", plan).filter(
        Q(fact_id__in=plan.fact_ids) | Q(source_episode_ids__overlap=plan.episode_ids or [-1])
    )


def _fact_changes_erase(plan: Plan) -> int:
    qs = _fact_changes_q(plan)
    count = int(qs.count())
    # Changes of facts that survive (other subjects' sources too) keep their history but drop the
    # subject's episode ids; changes of the subject's facts go with the facts.
    removed = set(plan.episode_ids)
    for change in qs.exclude(fact_id__in=plan.fact_ids):
        change.source_episode_ids = [i for i in change.source_episode_ids if i not in removed]
        change.save(update_fields=["source_episode_ids"])
    qs.filter(fact_id__in=plan.fact_ids).delete()
    return count


def _scratchpad_count(plan: Plan) -> int:

    return scratchpads_held(tenant=plan.tenant, session_external_ids=plan.session_external_ids)


def _scratchpad_erase(plan: Plan) -> int:

    return scratchpads_erase(tenant=plan.tenant, session_external_ids=plan.session_external_ids)


def _scratchpad_export(plan: Plan) -> Iterator[dict[str, Any]]:

    for s in plan.session_external_ids:
        pad = scratchpad_get(tenant=plan.tenant, session_external_id=s)
        if pad is not None:
            yield {"session": s, "version": pad.version, "document": pad.document, "updated_at": str(pad.updated_at)}


def _archive_count(plan: Plan) -> int:

    return sum(1 for _ in iter_archive_rows(tenant=plan.tenant, subject=plan.subject))


def _archive_erase(plan: Plan) -> int:

    removed = 0
    for manifest in ArchiveManifest.objects.select_for_update().filter(subjects__contains=[plan.subject]):
        rows = read_archive(manifest.path)
        kept = [r for r in rows if r["subject"] != plan.subject]
        removed += len(rows) - len(kept)
        write_archive(tenant=plan.tenant, month=manifest.month, rows=kept, manifest=manifest)
    return removed


def _archive_export(plan: Plan) -> Iterator[dict[str, Any]]:

    yield from iter_archive_rows(tenant=plan.tenant, subject=plan.subject)


def _runs_touching_episodes(plan: Plan) -> list[int]:
    """Runs whose episode range covers one of the subject's episodes: a sweep names no subject."""
    if not plan.episode_ids:
        return []
    ids = sorted(plan.episode_ids)
    candidates = ConsolidationRun.objects.filter(first_episode_id__lte=ids[-1], last_episode_id__gte=ids[0])
    touching = []
    for run_id, first, last in candidates.values_list("id", "first_episode_id", "last_episode_id"):
        if first is None or last is None:
            continue
        at = bisect.bisect_left(ids, first)
        if at < len(ids) and ids[at] <= last:
            touching.append(run_id)
    return touching


def _runs_q(plan: Plan) -> Any:
    # The subject id exactly: a run of "danax" is not one of "DANAx".
    return ConsolidationRun.objects.filter(
        Q(subject=plan.subject)
        | Q(session_external_id__in=plan.session_external_ids)
        | Q(entity=plan.subject)
        | Q(reason__contains=f" subject {plan.subject} ")
        | Q(id__in=_runs_touching_episodes(plan))
    )


def _runs_erase(plan: Plan) -> int:
    # The run stays for the operators' statistics; who, which session and what was read go.
    count = 0
    for run in _runs_q(plan).select_for_update():
        run.subject = run.session_external_id = run.entity = ""
        run.reason = "(erased)"
        run.problems = scrub_problems(run.problems or [])
        run.save(update_fields=["subject", "session_external_id", "entity", "reason", "problems"])
        count += 1
    return count


def _erasure_requests_q(plan: Plan) -> Any:
    return ErasureRequest.objects.filter(subject=plan.subject)


LOCATIONS: list[Location] = [
    Location(
        "fact_changes",
        "semantic.FactChange",
        "history of those facts (deleted) and the subject's episode ids in other facts' history (removed)",
        queryset=_fact_changes_q,
        erase_fn=_fact_changes_erase,
    ),
    Location(
        "fact_sources",
        "semantic.FactSource",
        "provenance links to the subject's episodes",
        queryset=lambda p: _qs("semantic.FactSource", p).filter(
            Q(episode_id__in=p.episode_ids) | Q(fact_id__in=p.fact_ids)
        ),
    ),
    Location(
        "fact_decay_anchors",
        "consolidation.FactDecayAnchor",
        "decay anchors of the subject's facts",
        queryset=lambda p: _qs("consolidation.FactDecayAnchor", p).filter(fact_id__in=p.fact_ids),
    ),
    Location(
        "facts",
        "semantic.Fact",
        "the subject's facts, and facts about other entities whose only sources were the subject's episodes",
        queryset=_facts_q,
        erase_fn=_facts_erase,
    ),
    Location(
        "procedure_outcomes",
        "procedural.ProcedureOutcome",
        "outcomes reported in the subject's sessions or episodes (procedure totals keep no personal data)",
        queryset=lambda p: _qs("procedural.ProcedureOutcome", p).filter(
            Q(session_external_id__in=p.session_external_ids) | Q(episode_id__in=p.episode_ids)
        ),
    ),
    Location(
        "context_feedback",
        "router.ContextFeedback",
        "feedback on contexts served for the subject",
        queryset=lambda p: _qs("router.ContextFeedback", p).filter(subject=p.subject),
    ),
    Location(
        "context_traces",
        "router.ContextTrace",
        "contexts served for the subject, with their queries",
        queryset=lambda p: _qs("router.ContextTrace", p).filter(subject=p.subject),
        erase_fn=_context_traces_erase,
    ),
    Location(
        "passage_sentences",
        "episodic.PassageSentence",
        "the vectors of the sentences of the subject's passages",
        queryset=_passage_sentences_q,
        erase_fn=_passage_sentences_erase,
        # Derived from the episodes' own content, which the export holds in full.
        export_fn=lambda p: [],
    ),
    Location(
        "passages",
        "episodic.Passage",
        "the parts of the subject's episodes that search ranks: their text, embeddings and search vectors",
        queryset=_passages_q,
        erase_fn=_passages_erase,
        # Copies of the episodes' own content, which the export holds in full.
        export_fn=lambda p: [],
    ),
    Location(
        "episodes",
        "episodic.Episode",
        "the subject's episodes, their embeddings and search vectors",
        queryset=lambda p: _qs("episodic.Episode", p).filter(Q(subject=p.subject) | Q(id__in=p.episode_ids)),
        erase_fn=_episodes_erase,
    ),
    Location(
        "sessions",
        "episodic.Session",
        "the subject's sessions and their summaries",
        queryset=lambda p: _qs("episodic.Session", p).filter(subject=p.subject),
        erase_fn=_sessions_erase,
    ),
    Location(
        "entity_aliases",
        "episodic.EntityAlias",
        "aliases learned from the subject's conversations (an operator's stay: tenant settings)",
        queryset=lambda p: _qs("episodic.EntityAlias", p).filter(
            learned_aliases_q(subject=p.subject, episode_ids=p.episode_ids)
        ),
    ),
    Location(
        "scratchpads",
        None,
        "working memory of the subject's sessions (Redis)",
        count_fn=_scratchpad_count,
        erase_fn=_scratchpad_erase,
        export_fn=_scratchpad_export,
    ),
    Location(
        "archives",
        "consolidation.ArchiveManifest",
        "archived episodes in cold storage (files rewritten without the subject)",
        count_fn=_archive_count,
        erase_fn=_archive_erase,
        export_fn=_archive_export,
    ),
    Location(
        "idempotency_records",
        "tenants.IdempotencyRecord",
        "stored API answers of requests about the subject (a hash of each key stays, to refuse its replay)",
        queryset=lambda p: _qs("tenants.IdempotencyRecord", p).filter(subjects__contains=[p.subject]),
        erase_fn=lambda p: idempotency_records_erase(tenant=p.tenant, subject=p.subject),
    ),
    Location(
        "consolidation_runs",
        "consolidation.ConsolidationRun",
        "the subject and session named on consolidation runs (the run's counts stay)",
        queryset=_runs_q,
        erase_fn=_runs_erase,
    ),
    Location(
        "erasure_requests",
        "privacy.ErasureRequest",
        "the subject id on erasure requests, cleared once they are done (the hash stays)",
        queryset=_erasure_requests_q,
        erase_fn=lambda p: 0,
        export_fn=lambda p: [],
    ),
]

# Models with a tenant (or subject) field that hold no data about a subject, and why.
NO_SUBJECT_DATA: dict[str, str] = {
    "tenants.TenantMembership": "operators of a tenant, not subjects",
    "tenants.ApiKey": "credentials of the tenant's services",
    "tenants.IdempotencyTombstone": "a hash of an erased request's Idempotency-Key (with the tenant id), no content",
    "tenants.TenantLock": "lock slots: a 16-bit hash of a resource name, from which nothing can be read back",
    "consolidation.ConsolidationWatermark": "one episode id per tenant",
    "procedural.Procedure": "tenant-level rules; discovery evidence holds aggregate counts only",
    "procedural.ProcedureEvent": "decisions about procedures by operators and discovery, aggregate figures",
    "router.ValueModel": "a tenant's learned value: coefficients aggregated over every context with feedback and "
    "the ids of the first and last trace trained on, no text; the traces it learned from are erased, and the "
    "next training (hourly) no longer sees them",
}


def registered_labels() -> set[str]:
    return {loc.model for loc in LOCATIONS if loc.model} | set(NO_SUBJECT_DATA)


def plan_for(*, tenant: Tenant, subject: str) -> Plan:
    """Call inside the tenant scope. An empty subject would match every row written without one."""
    if not subject.strip():
        raise ValueError("an erasure plan needs a subject")
    Session = apps.get_model("episodic.Session")
    Episode = apps.get_model("episodic.Episode")
    Fact = apps.get_model("semantic.Fact")
    FactSource = apps.get_model("semantic.FactSource")
    sessions = list(Session.objects.filter(subject=subject).values_list("id", "external_id"))
    episode_ids = list(Episode.objects.filter(subject=subject).values_list("id", flat=True))
    # The subject's facts as reads serve them (semantic.selectors.subject_facts_q: its memory, and the
    # tenant's own facts about exactly this id), and the tenant's own facts that name exactly this id
    # as their object. Another subject's memory stays, whatever it names: the subject id is compared
    # exactly, never folded ("PARISX" is not "parisx").
    own = set(
        Fact.objects.filter(subject_facts_q(subject) | Q(subject="", object_entity=subject)).values_list(
            "id", flat=True
        )
    )
    # Facts any writer derived only from this subject's episodes go too; mixed-source facts stay.
    touched = set(FactSource.objects.filter(episode_id__in=episode_ids).values_list("fact_id", flat=True))
    other_sourced = set(
        FactSource.objects.filter(fact_id__in=touched)
        .exclude(episode_id__in=episode_ids)
        .values_list("fact_id", flat=True)
    )
    return Plan(
        tenant=tenant,
        subject=subject,
        session_ids=[s[0] for s in sessions],
        session_external_ids=[s[1] for s in sessions],
        episode_ids=episode_ids,
        fact_ids=sorted(own | (touched - other_sourced), key=str),
    )


def locate(*, tenant: Tenant, subject: str) -> dict[str, int]:
    """Rows each location holds for the subject now."""
    with tenant_scope(tenant):
        plan = plan_for(tenant=tenant, subject=subject)
        counts = {loc.name: loc.count(plan) for loc in LOCATIONS if loc.available()}
    return counts


# --- requests ------------------------------------------------------------------------------------


def subject_erasure_lock(tenant: Tenant, digest: str) -> None:
    """After the subject's own slot where both are taken (erasure_execute; tenants.locks).
    Filing and completing requests of one subject take turns: a request filed while another is open
    joins it, and the one that completes settles every open request of its subject at once."""
    tenant_xact_lock(tenant.id, "erasure", digest)


def _claim(tenant: Tenant, request_id: str) -> ErasureRequest | None:
    with tenant_scope(tenant):
        request = ErasureRequest.objects.select_for_update(skip_locked=True).filter(pk=request_id).first()
        if request is None or request.status == ErasureStatus.DONE:
            return None
        request.status = ErasureStatus.EXECUTING
        request.started_at = request.started_at or timezone.now()
        request.attempts += 1
        request.error = ""
        request.save(update_fields=["status", "started_at", "attempts", "error"])
        return request


def erasure_execute(*, tenant: Tenant, request_id: str) -> ErasureRequest | None:
    """Erase, verify, record. Safe to run again: a done request is left alone, a failed one retried."""
    request = _claim(tenant, request_id)
    if request is None:
        return None
    subject = request.subject
    if not subject.strip() or subject_hash(tenant, subject) != request.subject_hash:
        return _settle_without_subject(tenant, request)
    try:
        # One transaction: the erasure, its verification and its record. The subject's slot, exclusive
        # (tenants.locks), first: its writes under way end before the plan is read, new ones wait until
        # this commits and are then new writes, so nothing written beside it is half-erased or found by
        # the verification.
        with tenant_scope(tenant):
            subject_lock(tenant.id, [subject], exclusive=True)
            plan = plan_for(tenant=tenant, subject=subject)
            counts: dict[str, int] = {}
            for location in LOCATIONS:
                if location.available():
                    counts[location.name] = location.erase(plan)
            remaining = locate(tenant=tenant, subject=subject)
            remaining.pop("erasure_requests", None)
            leftover = {k: v for k, v in remaining.items() if v}
            subject_erasure_lock(tenant, request.subject_hash)
            fresh = ErasureRequest.objects.select_for_update().get(pk=request.pk)
            fresh.counts = counts
            fresh.verification = {"remaining": remaining, "verified_at": timezone.now().isoformat()}
            if leftover:
                fresh.status = ErasureStatus.FAILED
                fresh.error = f"rows remain after erasure: {leftover}"
            else:
                fresh.status = ErasureStatus.DONE
                fresh.completed_at = timezone.now()
                fresh.receipt = {
                    "request_id": str(fresh.pk),
                    "tenant_id": str(tenant.id),
                    "subject_hash": fresh.subject_hash,
                    "locations": counts,
                    "verified_zero": sorted(remaining),
                    "completed_at": fresh.completed_at.isoformat(),
                }
                # Every request about this subject forgets the id now; the hash stays. Open ones (filed
                # twice before requests coalesced) are settled by this erasure, with its receipt.
                same = ErasureRequest.objects.filter(subject_hash=fresh.subject_hash).exclude(pk=fresh.pk)
                same.exclude(status=ErasureStatus.DONE).update(
                    status=ErasureStatus.DONE, completed_at=fresh.completed_at, receipt=fresh.receipt, error=""
                )
                same.update(subject="")
                fresh.subject = ""
            fresh.save()
            return fresh
    except Exception:
        logger.exception("erasure request %s of tenant %s failed", request.pk, tenant.id)
        with tenant_scope(tenant):
            ErasureRequest.objects.filter(pk=request.pk).update(status=ErasureStatus.FAILED, error=ERASURE_FAILED)
        raise


def _settle_without_subject(tenant: Tenant, request: ErasureRequest) -> ErasureRequest:
    """A request whose subject id is gone (or does not match its hash) never runs: an empty subject
    would erase every row written without one. A done erasure of the same subject settles it."""
    with tenant_scope(tenant):
        subject_erasure_lock(tenant, request.subject_hash)
        fresh = ErasureRequest.objects.select_for_update().get(pk=request.pk)
        done = (
            ErasureRequest.objects.filter(subject_hash=fresh.subject_hash, status=ErasureStatus.DONE)
            .exclude(pk=fresh.pk)
            .order_by("-completed_at")
            .first()
        )
        fresh.subject = ""
        if done is not None:
            fresh.status, fresh.receipt, fresh.completed_at = ErasureStatus.DONE, done.receipt, done.completed_at
        else:
            fresh.status, fresh.attempts = ErasureStatus.FAILED, MAX_ERASURE_ATTEMPTS
            fresh.error = "The subject id is not held; nothing was erased. File a new request naming the subject."
        fresh.save(update_fields=["subject", "status", "receipt", "completed_at", "attempts", "error"])
        return fresh


def subject_export(*, tenant: Tenant, subject: str) -> dict[str, Any]:
    """Everything held about the subject, by location (the registry's export of each)."""
    with tenant_scope(tenant):
        plan = plan_for(tenant=tenant, subject=subject)
        data = {
            loc.name: list(loc.export(plan))
            for loc in LOCATIONS
            if loc.available() and loc.name not in {"erasure_requests", "consolidation_runs", "idempotency_records"}
        }
    return {"subject": subject, "exported_at": timezone.now().isoformat(), "locations": data}

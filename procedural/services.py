"""Writes of procedural memory: create, edit (a new version), status decisions, outcomes, discovery."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from core.embedding import embed_one, embedding_cache
from core.errors import Conflict, ValidationProblem
from episodic.models import Episode, EpisodeKind, Outcome, Session, SessionStatus
from procedural.confidence import DeprecationVerdict, confidence_for, deprecation_verdict
from procedural.discovery import (
    TOKEN_PAYLOAD_KEYS,
    MiningSummary,
    Pattern,
    SessionSequence,
    Thresholds,
    collapse,
    describe_token,
    episode_token,
    mine_patterns,
)
from procedural.models import (
    Procedure,
    ProcedureEvent,
    ProcedureEventKind,
    ProcedureOutcome,
    ProcedureSource,
    ProcedureStatus,
)
from procedural.selectors import procedure_get
from procedural.triggers import Trigger, trigger_parse
from tenants.models import Tenant
from tenants.scope import for_each_batch

ACTOR_AUTO_DEPRECATION = "system:auto-deprecation"
ACTOR_DISCOVERY = "system:discovery"
MAX_NAME_CHARS = 200
MAX_DESCRIPTION_CHARS = 2_000
MAX_BEHAVIOUR_CHARS = 4_000
MAX_STEPS = 20
MAX_STEP_CHARS = 500
MAX_AGENT_CHARS = 255
CONTENT_FIELDS = ("name", "description", "trigger", "behaviour", "steps", "agent")
DISCOVERY_MAX_SESSIONS = 2_000


class ProcedureNotActive(ValidationProblem):
    """Outcomes are recorded for active procedures only."""


@dataclass(frozen=True)
class ProcedureContent:
    name: str
    description: str
    trigger: Trigger
    trigger_text: str
    behaviour: str
    steps: tuple[str, ...]
    agent: str


def _content(
    *,
    name: Any,
    description: Any,
    trigger: Any,
    behaviour: Any,
    steps: Any,
    agent: Any,
) -> ProcedureContent:
    errors: list[dict[str, str]] = []

    def text(value: Any, pointer: str, limit: int, *, required: bool) -> str:
        if value is None:
            value = ""
        if not isinstance(value, str):
            errors.append({"pointer": pointer, "detail": "Must be a string."})
            return ""
        value = value.strip()
        if required and not value:
            errors.append({"pointer": pointer, "detail": "Must not be empty."})
        elif len(value) > limit:
            errors.append({"pointer": pointer, "detail": f"At most {limit} characters."})
        return value

    clean_name = text(name, "/name", MAX_NAME_CHARS, required=True)
    clean_description = text(description, "/description", MAX_DESCRIPTION_CHARS, required=False)
    clean_behaviour = text(behaviour, "/behaviour", MAX_BEHAVIOUR_CHARS, required=True)
    clean_agent = text(agent, "/agent", MAX_AGENT_CHARS, required=False)
    clean_steps: list[str] = []
    if steps is None:
        steps = []
    if not isinstance(steps, (list, tuple)):
        errors.append({"pointer": "/steps", "detail": "Must be a list of strings, in order."})
    elif len(steps) > MAX_STEPS:
        errors.append({"pointer": "/steps", "detail": f"At most {MAX_STEPS} steps."})
    else:
        for index, step in enumerate(steps):
            clean_steps.append(text(step, f"/steps/{index}", MAX_STEP_CHARS, required=True))
    parsed = Trigger()
    trigger_text = ""
    try:
        parsed, trigger_text = trigger_parse(trigger)
    except ValidationProblem as exc:
        errors.extend(exc.errors)
    if errors:
        detail = "; ".join(f"{e['pointer']}: {e['detail']}" for e in errors[:5])
        raise ValidationProblem(detail, errors=errors)
    return ProcedureContent(
        name=clean_name,
        description=clean_description,
        trigger=parsed,
        trigger_text=trigger_text,
        behaviour=clean_behaviour,
        steps=tuple(clean_steps),
        agent=clean_agent,
    )


def trigger_document(procedure: Procedure) -> dict[str, Any]:
    """The trigger as the API shows and takes it: the conditions plus the description."""
    out = dict(procedure.trigger)
    if procedure.trigger_text:
        out["description"] = procedure.trigger_text
    return out


def _event(
    *,
    tenant: Tenant,
    procedure: Procedure,
    kind: str,
    actor: str,
    reason: str = "",
    figures: dict[str, Any] | None = None,
) -> ProcedureEvent:
    return ProcedureEvent.objects.create(
        tenant=tenant,
        procedure=procedure,
        lineage=procedure.lineage,
        kind=kind,
        actor=actor[:255],
        reason=reason,
        figures=figures or {},
    )


def _verdict(procedure: Procedure, tenant: Tenant) -> DeprecationVerdict:
    """Whether the procedure's recent window is bad enough to deprecate it, under the tenant's settings."""
    config = tenant.config
    return deprecation_verdict(
        successes=procedure.window_successes,
        failures=procedure.window_failures,
        min_applications=config.procedure_min_applications,
        threshold=config.procedure_deprecate_below,
    )


def _figures(procedure: Procedure, tenant: Tenant) -> dict[str, Any]:
    verdict = _verdict(procedure, tenant)
    return {
        "version": procedure.version,
        "confidence": procedure.confidence,
        "applications": procedure.applications,
        "successes": procedure.successes,
        "failures": procedure.failures,
        "not_applied": procedure.not_applied,
        "window": verdict.figures(),
    }


@transaction.atomic
def procedure_create(
    *,
    tenant: Tenant,
    name: str,
    behaviour: str,
    trigger: Mapping[str, Any],
    description: str = "",
    steps: Sequence[str] = (),
    agent: str = "",
    source: str = ProcedureSource.INSTRUCTION,
    status: str | None = None,
    created_by: str = "",
    evidence: dict[str, Any] | None = None,
    discovery_key: str = "",
    lineage: uuid.UUID | None = None,
    reason: str = "",
) -> Procedure:
    """A new procedure (version 1). Instructions start active, discovered rules as candidates."""
    content = _content(
        name=name, description=description, trigger=trigger, behaviour=behaviour, steps=steps, agent=agent
    )
    if source not in ProcedureSource.values:
        raise ValidationProblem.at("/source", f"Use one of {', '.join(ProcedureSource.values)}.")
    if status is None:
        status = ProcedureStatus.CANDIDATE if source == ProcedureSource.EXPERIENCE else ProcedureStatus.ACTIVE
    if status not in (ProcedureStatus.ACTIVE, ProcedureStatus.CANDIDATE):
        raise ValidationProblem.at("/status", "A new procedure is active or a candidate.")
    procedure = Procedure.objects.create(
        tenant=tenant,
        lineage=lineage or uuid.uuid4(),
        name=content.name,
        description=content.description,
        trigger=content.trigger.to_json(),
        trigger_text=content.trigger_text,
        trigger_embedding=embed_one(content.trigger_text) if content.trigger_text else None,
        behaviour=content.behaviour,
        steps=list(content.steps),
        agent=content.agent,
        source=source,
        status=status,
        created_by=created_by[:255],
        evidence=evidence or {},
        discovery_key=discovery_key,
        confidence=confidence_for(source=source, successes=0, failures=0),
    )
    kind = (
        ProcedureEventKind.DISCOVERED
        if source == ProcedureSource.EXPERIENCE and evidence
        else ProcedureEventKind.CREATED
    )
    _event(
        tenant=tenant,
        procedure=procedure,
        kind=kind,
        actor=created_by or "unknown",
        reason=reason,
        figures={"status": status, "source": source, "confidence": procedure.confidence},
    )
    return procedure


def _locked(*, tenant: Tenant, procedure_id: int | str) -> Procedure:
    procedure_get(tenant=tenant, procedure_id=procedure_id)  # the 404 for missing and foreign ids alike
    return Procedure.objects.select_for_update().defer("trigger_embedding").get(pk=int(procedure_id))


def procedures_reembed(*, tenant: Tenant, batch_size: int = 256, progress: Callable[[int], None] | None = None) -> int:
    """Embed again, with today's embedder, the trigger text of every procedure version of the tenant
    that has a vector, batch by batch, each batch its own transaction. After a change of embedding file
    (episodic.passages.passages_reembed says why). Returns how many."""

    def store(batch: list[Procedure]) -> None:
        vectors = embedding_cache.embed([p.trigger_text for p in batch])
        for procedure, vector in zip(batch, vectors, strict=True):
            procedure.trigger_embedding = vector
        Procedure.objects.bulk_update(batch, ["trigger_embedding"])

    return for_each_batch(
        tenant=tenant,
        rows=lambda: Procedure.objects.filter(trigger_embedding__isnull=False).only("id", "trigger_text"),
        each=store,
        batch_size=batch_size,
        progress=progress,
    )


@transaction.atomic
def procedure_update(
    *, tenant: Tenant, procedure_id: int | str, actor: str, changes: Mapping[str, Any], reason: str = ""
) -> Procedure:
    """PATCH: content changes make a new version (returned; its statistics start empty), then a
    `status` change is applied to the current version."""
    unknown = [key for key in changes if key not in (*CONTENT_FIELDS, "status")]
    if unknown:
        raise ValidationProblem.at(f"/{unknown[0]}", "Unknown or read-only field.")
    procedure = _locked(tenant=tenant, procedure_id=procedure_id)
    content_changes = {k: v for k, v in changes.items() if k in CONTENT_FIELDS}
    if content_changes:
        procedure = _new_version(
            tenant=tenant, procedure=procedure, changes=content_changes, actor=actor, reason=reason
        )
    if "status" in changes and changes["status"] != procedure.status:
        procedure = _set_status(
            tenant=tenant, procedure=procedure, status=changes["status"], actor=actor, reason=reason
        )
    return procedure


def _new_version(
    *, tenant: Tenant, procedure: Procedure, changes: Mapping[str, Any], actor: str, reason: str
) -> Procedure:
    current: dict[str, Any] = {
        "name": procedure.name,
        "description": procedure.description,
        "trigger": trigger_document(procedure),
        "behaviour": procedure.behaviour,
        "steps": list(procedure.steps),
        "agent": procedure.agent,
    }
    merged = {**current, **changes}
    content = _content(**merged)
    unchanged = (
        content.name == procedure.name
        and content.description == procedure.description
        and content.trigger.to_json() == procedure.trigger
        and content.trigger_text == procedure.trigger_text
        and content.behaviour == procedure.behaviour
        and list(content.steps) == list(procedure.steps)
        and content.agent == procedure.agent
    )
    if unchanged:
        return procedure
    if not procedure.is_current:
        current_id = (
            Procedure.objects.filter(lineage=procedure.lineage, is_current=True).values_list("pk", flat=True).first()
        )
        raise Conflict(
            f"Procedure {procedure.pk} is version {procedure.version}, not the current one; edit procedure {current_id}.",
            current_id=current_id,
        )
    now = timezone.now()
    procedure.is_current = False
    procedure.updated_at = now
    procedure.save(update_fields=["is_current", "updated_at"])
    embedding: Any = None
    if content.trigger_text:
        if content.trigger_text == procedure.trigger_text:
            embedding = Procedure.objects.values_list("trigger_embedding", flat=True).get(pk=procedure.pk)
        else:
            embedding = embed_one(content.trigger_text)
    new = Procedure.objects.create(
        tenant=tenant,
        lineage=procedure.lineage,
        version=procedure.version + 1,
        name=content.name,
        description=content.description,
        trigger=content.trigger.to_json(),
        trigger_text=content.trigger_text,
        trigger_embedding=embedding,
        behaviour=content.behaviour,
        steps=list(content.steps),
        agent=content.agent,
        source=procedure.source,
        status=procedure.status,
        created_by=actor[:255],
        evidence=procedure.evidence,
        discovery_key=procedure.discovery_key,
        confidence=confidence_for(source=procedure.source, successes=0, failures=0),
    )
    procedure.superseded_by = new
    procedure.save(update_fields=["superseded_by"])
    _event(
        tenant=tenant,
        procedure=new,
        kind=ProcedureEventKind.EDITED,
        actor=actor,
        reason=reason,
        figures={
            "previous_id": procedure.pk,
            "previous_version": procedure.version,
            "changed": sorted(k for k in changes if merged[k] != current[k]),
            "previous": _figures(procedure, tenant),
        },
    )
    return new


_TRANSITIONS: dict[tuple[str, str], str] = {
    (ProcedureStatus.CANDIDATE, ProcedureStatus.ACTIVE): ProcedureEventKind.APPROVED,
    (ProcedureStatus.CANDIDATE, ProcedureStatus.DEPRECATED): ProcedureEventKind.REJECTED,
    (ProcedureStatus.ACTIVE, ProcedureStatus.DEPRECATED): ProcedureEventKind.DEPRECATED,
    (ProcedureStatus.DEPRECATED, ProcedureStatus.ACTIVE): ProcedureEventKind.REACTIVATED,
}


def _set_status(*, tenant: Tenant, procedure: Procedure, status: Any, actor: str, reason: str) -> Procedure:
    if status not in ProcedureStatus.values:
        raise ValidationProblem.at("/status", f"Use one of {', '.join(ProcedureStatus.values)}.")
    if status == procedure.status:
        return procedure
    kind = _TRANSITIONS.get((procedure.status, status))
    if kind is None:
        raise ValidationProblem.at(
            "/status", f"A procedure cannot go from {procedure.status} to {status}; candidates come from discovery."
        )
    if status == ProcedureStatus.ACTIVE and not procedure.is_current:
        raise Conflict(f"Procedure {procedure.pk} is an old version; activate the current version of its lineage.")
    figures = _figures(procedure, tenant)
    procedure.status = status
    procedure.status_changed_at = procedure.updated_at = timezone.now()
    update = ["status", "status_changed_at", "updated_at"]
    if status == ProcedureStatus.ACTIVE:
        # A fresh hearing: automatic deprecation judges the outcomes from now on.
        procedure.window_successes = procedure.window_failures = 0
        update += ["window_successes", "window_failures"]
    procedure.save(update_fields=update)
    _event(tenant=tenant, procedure=procedure, kind=kind, actor=actor, reason=reason, figures=figures)
    return procedure


@transaction.atomic
def procedure_set_status(
    *, tenant: Tenant, procedure_id: int | str, status: str, actor: str, reason: str = ""
) -> Procedure:
    """Approve (candidate -> active), reject (candidate -> deprecated), deprecate, reactivate."""
    procedure = _locked(tenant=tenant, procedure_id=procedure_id)
    return _set_status(tenant=tenant, procedure=procedure, status=status, actor=actor, reason=reason)


def procedure_deprecate(*, tenant: Tenant, procedure_id: int | str, actor: str, reason: str = "") -> Procedure:
    """DELETE: deprecate (a candidate is rejected); idempotent."""
    return procedure_set_status(
        tenant=tenant, procedure_id=procedure_id, status=ProcedureStatus.DEPRECATED, actor=actor, reason=reason
    )


def procedure_reactivate(*, tenant: Tenant, procedure_id: int | str, actor: str, reason: str = "") -> Procedure:
    return procedure_set_status(
        tenant=tenant, procedure_id=procedure_id, status=ProcedureStatus.ACTIVE, actor=actor, reason=reason
    )


def procedure_approve(*, tenant: Tenant, procedure_id: int | str, actor: str, reason: str = "") -> Procedure:
    procedure = procedure_get(tenant=tenant, procedure_id=procedure_id)
    if procedure.status != ProcedureStatus.CANDIDATE:
        raise ValidationProblem.at("/status", f"Procedure {procedure.pk} is {procedure.status}, not a candidate.")
    return procedure_set_status(
        tenant=tenant, procedure_id=procedure_id, status=ProcedureStatus.ACTIVE, actor=actor, reason=reason
    )


@transaction.atomic
def procedure_outcome_record(
    *,
    tenant: Tenant,
    procedure_id: int | str,
    applied: bool,
    success: bool | None,
    signal: float | None,
    session_external_id: str | None,
    episode_id: int | None,
) -> ProcedureOutcome:
    """Record that a procedure was (or was not) applied and how it went, update the statistics of
    that version, and deprecate it when its evidence says so. Idempotent per procedure and episode:
    the same report again returns the stored outcome; a different one for the same episode is a 409.

    With no `success` but a `signal` in [-1, 1], a positive signal counts as success and a negative
    one as failure. Raises ProcedureNotActive (400) for candidate or deprecated procedures."""
    if signal is not None and not (isinstance(signal, (int, float)) and -1.0 <= float(signal) <= 1.0):
        raise ValidationProblem.at("/signal", "The signal is a number between -1 and 1.")
    if not applied and success is not None:
        raise ValidationProblem.at("/success", "Only an applied procedure can succeed or fail.")
    if applied and success is None and signal:
        success = signal > 0
    session_external_id = (session_external_id or "").strip()
    if len(session_external_id) > 255:
        raise ValidationProblem.at("/session", "At most 255 characters.")
    episode: Episode | None = None
    if episode_id is not None:
        episode = Episode.objects.filter(pk=episode_id, session__tenant_id=tenant.id).select_related("session").first()
        if episode is None:
            raise ValidationProblem.at("/episode", f"No episode {episode_id}.")
        if session_external_id and episode.session.external_id != session_external_id:
            raise ValidationProblem.at("/episode", f"Episode {episode_id} is not in session {session_external_id}.")
        session_external_id = episode.session.external_id

    # The row lock serialises outcomes of one procedure: counters and the deprecation verdict are
    # computed on what the previous outcome left, and the episode check below cannot race.
    procedure = _locked(tenant=tenant, procedure_id=procedure_id)
    if episode is not None:
        existing = ProcedureOutcome.objects.filter(procedure=procedure, episode=episode).first()
        if existing is not None:
            same = (existing.applied, existing.success, existing.signal) == (applied, success, signal)
            if not same:
                raise Conflict(
                    f"An outcome of procedure {procedure.pk} for episode {episode.pk} was already recorded "
                    "with other values."
                )
            return existing
    if procedure.status != ProcedureStatus.ACTIVE:
        raise ProcedureNotActive(
            f"Procedure {procedure.pk} is {procedure.status}; outcomes are recorded for active procedures only.",
            errors=[{"pointer": "/", "detail": f"The procedure is {procedure.status}."}],
        )
    outcome = ProcedureOutcome.objects.create(
        tenant=tenant,
        procedure=procedure,
        session_external_id=session_external_id,
        episode=episode,
        applied=applied,
        success=success,
        signal=signal,
    )
    update = ["updated_at"]
    if applied:
        procedure.applications += 1
        procedure.last_applied_at = outcome.recorded_at
        update += ["applications", "last_applied_at"]
        if success is True:
            procedure.successes += 1
            procedure.window_successes += 1
            update += ["successes", "window_successes"]
        elif success is False:
            procedure.failures += 1
            procedure.window_failures += 1
            update += ["failures", "window_failures"]
    else:
        procedure.not_applied += 1
        update.append("not_applied")
    procedure.confidence = confidence_for(
        source=procedure.source, successes=procedure.successes, failures=procedure.failures
    )
    procedure.updated_at = timezone.now()
    procedure.save(update_fields=[*update, "confidence"])
    if applied and success is not None:
        _maybe_deprecate(tenant=tenant, procedure=procedure)
    return outcome


def _maybe_deprecate(*, tenant: Tenant, procedure: Procedure) -> None:
    verdict = _verdict(procedure, tenant)
    if not verdict.due:
        return
    figures = _figures(procedure, tenant)
    procedure.status = ProcedureStatus.DEPRECATED
    procedure.status_changed_at = procedure.updated_at = timezone.now()
    procedure.save(update_fields=["status", "status_changed_at", "updated_at"])
    _event(
        tenant=tenant,
        procedure=procedure,
        kind=ProcedureEventKind.DEPRECATED,
        actor=ACTOR_AUTO_DEPRECATION,
        reason=(
            f"{verdict.successes} successes in {verdict.applications} applications: the success rate is at most "
            f"{verdict.upper:.2f} (one-sided 95%), below {verdict.threshold:.2f}."
        ),
        figures=figures,
    )


@dataclass
class DiscoveryReport:
    summary: MiningSummary
    created: list[int] = field(default_factory=list)
    refreshed: list[int] = field(default_factory=list)
    known: list[int] = field(default_factory=list)
    patterns: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "summary": asdict(self.summary),
            "created": self.created,
            "refreshed": self.refreshed,
            "known": self.known,
            "patterns": self.patterns,
        }


def _session_success(outcome: str | None, signal: float | None) -> bool | None:
    if outcome == Outcome.SUCCESS:
        return True
    if outcome == Outcome.FAILURE:
        return False
    if signal:
        return signal > 0
    return None


def discovery_sequences(*, tenant: Tenant, since: datetime) -> list[SessionSequence]:
    """Ended sessions with a known outcome since `since` (most recent first, capped), as tokens."""
    sessions = list(
        Session.objects.filter(status=SessionStatus.ENDED, ended_at__gte=since)
        .filter(Q(outcome__in=(Outcome.SUCCESS, Outcome.FAILURE)) | Q(outcome_signal__isnull=False))
        .order_by("-ended_at", "-id")
        .values_list("id", "external_id", "outcome", "outcome_signal")[:DISCOVERY_MAX_SESSIONS]
    )
    labelled = {sid: (ext, _session_success(o, s)) for sid, ext, o, s in sessions}
    labelled = {sid: v for sid, v in labelled.items() if v[1] is not None}
    tokens: dict[int, list[str | None]] = {sid: [] for sid in labelled}
    # Only the payload keys tokens are made of leave the database: payloads may hold whole tool outputs.
    keys = {f"p_{key}": KeyTextTransform(key, "payload") for key in TOKEN_PAYLOAD_KEYS}
    rows = (
        Episode.objects.filter(session_id__in=list(labelled))
        .exclude(kind__in=(EpisodeKind.OUTCOME, EpisodeKind.SUMMARY))
        .annotate(**keys)
        .order_by("session_id", "occurred_at", "id")
        .values_list("session_id", "kind", "role", *keys.keys())
    )
    for session_id, kind, role, *values in rows.iterator(chunk_size=5_000):
        payload = {
            k: v for k, v in zip(TOKEN_PAYLOAD_KEYS, values, strict=True) if v not in (None, "", "false", "null")
        }
        tokens[session_id].append(episode_token(kind, role, payload))
    return [
        SessionSequence(session_id=sid, external_id=ext, success=bool(ok), tokens=collapse(tokens[sid]))
        for sid, (ext, ok) in sorted(labelled.items())
    ]


def _candidate_fields(pattern: Pattern) -> dict[str, Any]:
    first, rest = pattern.items[0], pattern.items[1:]
    parts = first.split(":")
    trigger: dict[str, Any] = {}
    if parts[0] in ("tool_call", "tool_result") and len(parts) > 1:
        condition: dict[str, Any] = {"name": parts[1]}
        if parts[0] == "tool_result" and len(parts) > 2:
            condition["status"] = [int(parts[2]) if parts[2].isdigit() else parts[2]]
        trigger["tools"] = [condition]
    situation = describe_token(first)
    trigger["description"] = f"When {situation}"
    steps = [describe_token(t)[:500] for t in rest]
    return {
        "name": f"After {situation}: {', then '.join(steps)}"[:MAX_NAME_CHARS],
        "behaviour": (
            f"In successful sessions, after {situation} the agent went on to {', then '.join(steps)}. Do the same."
        ),
        "steps": steps,
        "trigger": trigger,
        "description": (
            f"Discovered from {pattern.with_success} successful and {pattern.with_failure} failed sessions: "
            f"support {pattern.support:.2f}, confidence {pattern.confidence:.2f}, lift {pattern.lift:.2f}."
        ),
    }


@transaction.atomic
def procedures_discover(*, tenant: Tenant, now: datetime | None = None) -> DiscoveryReport:
    """Mine the tenant's recent ended sessions and propose what separates success from failure as
    candidate procedures (source experience), awaiting an operator's approval. A pattern proposed
    before is not proposed again; a still-pending candidate gets its evidence refreshed."""
    config = tenant.config
    now = now or timezone.now()
    since = now - timedelta(days=config.retention_days)
    thresholds = Thresholds(
        min_support=config.discovery_min_support,
        min_confidence=config.discovery_min_confidence,
        min_lift=config.discovery_min_lift,
        min_sessions=config.discovery_min_sessions,
    )
    patterns, summary = mine_patterns(discovery_sequences(tenant=tenant, since=since), thresholds)
    report = DiscoveryReport(summary=summary)
    for pattern in patterns:
        evidence = {
            **pattern.figures(),
            "sessions_considered": summary.sessions,
            "successful_sessions": summary.successful,
            "failed_sessions": summary.failed,
            "patterns_tested": summary.patterns_tested,
            "window_days": config.retention_days,
            "mined_at": now.isoformat(),
        }
        report.patterns.append(evidence)
        existing = (
            Procedure.objects.filter(discovery_key=pattern.key)
            .defer("trigger_embedding")
            .order_by("-is_current", "-version")
            .first()
        )
        if existing is None:
            created = procedure_create(
                tenant=tenant,
                source=ProcedureSource.EXPERIENCE,
                status=ProcedureStatus.CANDIDATE,
                created_by=ACTOR_DISCOVERY,
                evidence=evidence,
                discovery_key=pattern.key,
                reason="frequent in successful sessions, rare in failed ones",
                **_candidate_fields(pattern),
            )
            report.created.append(created.pk)
        elif existing.status == ProcedureStatus.CANDIDATE and existing.is_current:
            existing.evidence = evidence
            existing.updated_at = now
            existing.save(update_fields=["evidence", "updated_at"])
            report.refreshed.append(existing.pk)
        else:
            report.known.append(existing.pk)
    return report

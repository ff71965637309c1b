"""Reads of procedural memory: lookups, lists, version history, matching and stats."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from django.db import connection
from django.db.models import Count, Q, QuerySet
from pgvector import Vector
from pgvector.django import CosineDistance

from core.embedding import embed_one
from core.errors import NotFound
from episodic.models import Episode, Session
from procedural.models import Procedure, ProcedureEvent, ProcedureOutcome, ProcedureStatus
from procedural.triggers import SEMANTIC_WEIGHT, ConditionHit, Situation, combine, trigger_evaluate, trigger_from_text
from tenants.models import Tenant

MAX_MATCH_LIMIT = 50
MAX_ID = 2**63 - 1  # bigint: a larger id in a URL is simply not found


@dataclass(frozen=True)
class ProcedureMatch:
    procedure: Procedure
    score: float
    confidence: float
    why: list[str]
    strength: float = 0.0
    score_parts: dict[str, float] = field(default_factory=dict)


def procedure_get(*, tenant: Tenant, procedure_id: int | str) -> Procedure:
    """Any version by its id; another tenant's id is as missing as an unknown one."""
    try:
        pk = int(procedure_id)
    except (TypeError, ValueError) as exc:
        raise NotFound(f"No procedure {procedure_id}.") from exc
    if not 0 < pk <= MAX_ID:
        raise NotFound(f"No procedure {procedure_id}.")
    procedure = Procedure.objects.filter(pk=pk).defer("trigger_embedding").first()
    if procedure is None:
        raise NotFound(f"No procedure {procedure_id}.")
    return procedure


def procedure_list(
    *,
    tenant: Tenant,
    status: str | None = None,
    source: str | None = None,
    agent: str | None = None,
    lineage: uuid.UUID | None = None,
    all_versions: bool = False,
) -> QuerySet[Procedure]:
    """Current versions unless `all_versions` (or a lineage, whose every version is listed)."""
    qs = Procedure.objects.defer("trigger_embedding")
    if lineage is not None:
        qs = qs.filter(lineage=lineage)
    elif not all_versions:
        qs = qs.filter(is_current=True)
    if status:
        qs = qs.filter(status=status)
    if source:
        qs = qs.filter(source=source)
    if agent is not None:
        qs = qs.filter(agent=agent)
    return qs


def procedure_versions(*, tenant: Tenant, procedure_id: int | str) -> list[Procedure]:
    """Every version of the procedure's lineage, oldest first."""
    procedure = procedure_get(tenant=tenant, procedure_id=procedure_id)
    return list(Procedure.objects.filter(lineage=procedure.lineage).defer("trigger_embedding").order_by("version"))


def procedure_events(*, tenant: Tenant, lineage: uuid.UUID) -> list[ProcedureEvent]:
    return list(ProcedureEvent.objects.filter(lineage=lineage).order_by("created_at", "id"))


_MATCH_SQL = """
SELECT id, agent, confidence, trigger::text, trigger_text <> '', trigger_embedding <=> %s::vector
FROM procedural_procedure
WHERE tenant_id = %s AND is_current AND status = %s AND agent = ANY(%s)
ORDER BY id
"""


def procedure_match(
    *,
    tenant: Tenant,
    message: str = "",
    tool_events: Sequence[Mapping[str, Any]] = (),
    entities: Sequence[str] = (),
    topics: Sequence[str] = (),
    agent: str = "",
    limit: int = 10,
    session_kind: str = "",
    query_embedding: list[float] | None = None,
) -> list[ProcedureMatch]:
    """The active procedures that apply now, best first: score = match strength x confidence.

    Strength combines the conditions that hold (noisy-or of their weights, see procedural.triggers)
    with the similarity of the message to the trigger description when that reaches the tenant's
    `procedure_semantic_threshold`. Procedures scoped to an agent apply to that agent only. Ties are
    broken by id, so the same state and request give the same answer.

    Two queries (three when rules have descriptions and no `query_embedding` is given): the trigger
    columns of every candidate, then the full rows of the matches returned."""
    limit = max(1, min(limit, MAX_MATCH_LIMIT))
    situation = Situation.build(
        message=message, tool_events=tool_events, entities=entities, topics=topics, session_kind=session_kind
    )
    agents = ["", agent] if agent else [""]
    semantic = bool(message.strip())
    vector = Vector(query_embedding).to_text() if semantic and query_embedding is not None else None
    # Plain SQL, not the ORM: it is read on every context request, and building the query (a cast, a
    # vector expression) cost more than running it, most often to find no procedure at all.
    with connection.cursor() as cursor:
        cursor.execute(_MATCH_SQL, [vector, tenant.id, ProcedureStatus.ACTIVE, agents])
        rows = cursor.fetchall()
    similarities = {pk: 1.0 - float(d) for pk, *_, d in rows if d is not None}
    if semantic and query_embedding is None and any(row[4] for row in rows):
        similarities = _similarities(tenant=tenant, ids=[row[0] for row in rows if row[4]], message=message)
    threshold = tenant.config.procedure_semantic_threshold
    scored: list[tuple[int, float, float, float, list[ConditionHit], str]] = []
    for pk, scope, confidence, trigger_json, _, _ in rows:
        hits: list[ConditionHit] = trigger_evaluate(trigger_from_text(trigger_json), situation)
        similarity = similarities.get(pk)
        if similarity is not None and similarity >= threshold:
            hits.append(
                ConditionHit(
                    "semantic", SEMANTIC_WEIGHT * similarity, f"message resembles the trigger ({similarity:.2f})"
                )
            )
        if hits:
            strength = combine(h.strength for h in hits)
            scored.append((pk, round(strength * confidence, 6), round(strength, 6), confidence, hits, scope))
    scored.sort(key=lambda m: (-m[1], -m[2], m[0]))
    scored = scored[:limit]
    procedures = Procedure.objects.defer("trigger_embedding").in_bulk([m[0] for m in scored])
    matches: list[ProcedureMatch] = []
    for pk, score, strength, confidence, hits, scope in scored:
        why = [h.why for h in hits]
        if scope:
            why.append(f'scoped to agent "{scope}"')
        parts = {h.kind: round(h.strength, 4) for h in hits}
        parts["strength"] = strength
        parts["confidence"] = confidence
        matches.append(
            ProcedureMatch(
                procedure=procedures[pk],
                score=score,
                confidence=confidence,
                why=why,
                strength=strength,
                score_parts=parts,
            )
        )
    return matches


def _similarities(*, tenant: Tenant, ids: list[int], message: str) -> dict[int, float]:
    vector = embed_one(message)
    # A handful of rows per tenant: exact distances on the candidates' ids, no vector index needed.
    rows = (
        Procedure.objects.filter(pk__in=ids, trigger_embedding__isnull=False)
        .annotate(distance=CosineDistance("trigger_embedding", vector))
        .values_list("pk", "distance")
    )
    return {pk: 1.0 - float(distance) for pk, distance in rows}


class ProcedureStats(TypedDict):
    active: int
    candidates: int
    deprecated: int
    outcomes: int
    applied: int
    successes: int
    failures: int
    success_rate: float | None


def procedure_stats(*, tenant: Tenant) -> ProcedureStats:
    """Figures for GET /v1/stats: current procedures by status, and the outcomes of all versions."""
    by_status = dict(
        Procedure.objects.filter(is_current=True)
        .values_list("status")
        .annotate(n=Count("id"))
        .values_list("status", "n")
    )
    totals = ProcedureOutcome.objects.aggregate(
        n_outcomes=Count("id"),
        n_applied=Count("id", filter=Q(applied=True)),
        n_successes=Count("id", filter=Q(applied=True, success=True)),
        n_failures=Count("id", filter=Q(applied=True, success=False)),
    )
    judged = totals["n_successes"] + totals["n_failures"]
    return ProcedureStats(
        active=by_status.get(ProcedureStatus.ACTIVE, 0),
        candidates=by_status.get(ProcedureStatus.CANDIDATE, 0),
        deprecated=by_status.get(ProcedureStatus.DEPRECATED, 0),
        outcomes=totals["n_outcomes"],
        applied=totals["n_applied"],
        successes=totals["n_successes"],
        failures=totals["n_failures"],
        success_rate=round(totals["n_successes"] / judged, 4) if judged else None,
    )


def outcome_subject(*, tenant: Tenant, outcome: ProcedureOutcome) -> str:
    """Whose session or episode the outcome was reported in ("" when neither names a subject)."""

    found: QuerySet[Any, str]
    if outcome.episode_id is not None:
        found = Episode.objects.filter(pk=outcome.episode_id).values_list("subject", flat=True)
    elif outcome.session_external_id:
        found = Session.objects.filter(external_id=outcome.session_external_id).values_list("subject", flat=True)
    else:
        return ""
    return str(found.first() or "")

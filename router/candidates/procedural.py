"""The procedural layer's candidates: the procedures that match the query, the session's tool events
and the query's entities and topics."""

from __future__ import annotations

from collections.abc import Sequence

from episodic.selectors import EpisodeRow
from procedural.models import Procedure
from procedural.selectors import procedure_match
from router.candidates.common import clip
from router.types import Candidate, ContextRequest
from tenants.models import Tenant


def procedure_text(procedure: Procedure, confidence: float) -> str:
    """One line for a procedure: its name, what to do, its steps."""
    steps = "; ".join(str(s) for s in procedure.steps or [] if s)
    behaviour = " ".join(procedure.behaviour.split())
    text = f"{procedure.name}: {behaviour}" + (f" Steps: {steps}." if steps else "")
    return f"{text} (confidence {confidence:.2f})"


def procedure_candidates(
    *,
    tenant: Tenant,
    request: ContextRequest,
    entities: Sequence[str],
    topics: Sequence[str],
    recent: Sequence[EpisodeRow],
    embedding: list[float] | None,
) -> list[Candidate]:

    tool_events = [
        {"kind": e.kind, "role": e.role, "content": e.content, "payload": e.payload}
        for e in recent
        if e.kind in ("tool_call", "tool_result")
    ]
    matches = procedure_match(
        tenant=tenant,
        message=request.query,
        tool_events=tool_events,
        entities=entities,
        topics=topics,
        agent=request.agent,
        limit=10,
        session_kind=request.session_kind,
        query_embedding=embedding,
    )
    out = []
    for rank, match in enumerate(matches):
        procedure = match.procedure
        value = max(match.score, 0.0) * (0.5 + 0.5 * match.confidence)
        out.append(
            Candidate(
                id=f"procedure:{procedure.pk}",
                type="procedure",
                layer="procedural",
                section="Procedures",
                text=clip(procedure_text(procedure, match.confidence), 200),
                value=value,
                score=match.score,
                score_parts={**match.score_parts, "match": match.score, "confidence": match.confidence},
                order=(rank,),
            )
        )
    return out

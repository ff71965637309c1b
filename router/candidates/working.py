"""The working layer's candidates: each top-level key of the session's scratchpad, in document order."""

from __future__ import annotations

import json
from typing import Any

from episodic.scratchpad import scratchpad_get
from router.candidates.common import clip
from router.types import BudgetPlan, Candidate, ContextRequest
from tenants.models import Tenant


def note_candidates(
    *, tenant: Tenant, request: ContextRequest, plan: BudgetPlan
) -> tuple[list[Candidate], dict[str, Any] | None, int | None]:

    pad = scratchpad_get(tenant=tenant, session_external_id=request.session)
    if pad is None or not pad.document:
        return [], None, None
    out = []
    keys = list(pad.document)
    for index, key in enumerate(keys):
        value = pad.document[key]
        rendered = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
        out.append(
            Candidate(
                id=f"note:{key}",
                type="working_note",
                layer="working",
                section="Working notes",
                text=clip(f"{key}: {rendered}", max(plan.working - 8, 4)),
                # Earlier keys first when not everything fits: documents put the plan up front.
                value=1.0 - index / (len(keys) + 1),
                score=1.0,
                score_parts={"position": float(index)},
                occurred_at=pad.updated_at,
                order=(index,),
            )
        )
    return out, dict(pad.document), pad.version

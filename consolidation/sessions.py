"""Closing a session: the orchestration that spans the layers, so it lives in the highest one involved.

The scratchpad becomes a summary episode, the session is marked ended, and consolidation of the
session is enqueued once the transaction commits."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from consolidation.tasks import consolidate_session
from episodic.models import Session
from episodic.scratchpad import ScratchpadSummaryReason, scratchpad_summarise
from episodic.services import session_lock_for_end, session_mark_ended
from tenants.models import Tenant


@transaction.atomic
def session_close(
    *,
    tenant: Tenant,
    external_id: str,
    outcome: str | None,
    outcome_signal: float | None,
    ended_at: datetime | None = None,
) -> Session:
    """End the session (now, or at `ended_at` for a replayed one): summarise its scratchpad into an
    episode, mark it ended, and enqueue its consolidation after commit. Ending an ended session again
    with the same outcome changes nothing (a retry); with another outcome it is a 409."""
    session, retry = session_lock_for_end(
        tenant=tenant, external_id=external_id, outcome=outcome, outcome_signal=outcome_signal, ended_at=ended_at
    )
    if retry:
        return session
    summary = scratchpad_summarise(
        tenant=tenant, session_external_id=external_id, reason=ScratchpadSummaryReason.SESSION_END, at=ended_at
    )
    session = session_mark_ended(
        session=session, outcome=outcome, outcome_signal=outcome_signal, appended=summary is not None, ended_at=ended_at
    )
    tenant_id, session_id = str(tenant.id), session.pk
    transaction.on_commit(lambda: consolidate_session.delay(tenant_id, session_id))
    return session

"""Consolidation runs: recorded, continued on redelivery, each episode consolidated once."""

from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun, ConsolidationWatermark, RunStatus, RunTrigger
from consolidation.tasks import consolidate_session
from episodic.models import Episode
from tenants.scope import tenant_scope
from tests.consolidation.conftest import make_episode, make_session

pytestmark = pytest.mark.django_db


def test_session_end_task_records_a_run_with_its_trigger_and_range(tenant_a) -> None:
    session = make_session(tenant_a, "s-1", ended=True)
    first = make_episode(tenant_a, session, "Hello there, just saying hi.")
    last = make_episode(tenant_a, session, "Nothing to remember here either.")
    run_id = consolidate_session.delay(str(tenant_a.id), session.id).get()
    with tenant_scope(tenant_a):
        run = ConsolidationRun.objects.for_tenant(tenant_a).get(pk=run_id)
        assert run.trigger == RunTrigger.SESSION_ENDED
        assert run.status == RunStatus.SUCCEEDED
        assert run.reason == "session s-1 ended"
        summary = Episode.objects.for_tenant(tenant_a).get(session=session, kind="summary")
        # The summary is written first, then read (and skipped by the extractor) with the rest.
        assert (run.first_episode_id, run.last_episode_id) == (first.id, summary.id)
        assert run.episodes_read == 3
        assert run.summaries_written == 1
        assert run.finished_at is not None and run.duration_ms is not None
        wm = ConsolidationWatermark.objects.for_tenant(tenant_a).get()
        assert wm.is_done(first.id) and wm.is_done(last.id)


def test_task_for_a_missing_session_does_nothing(tenant_a) -> None:
    assert consolidate_session.delay(str(tenant_a.id), 987654).get() is None
    with tenant_scope(tenant_a):
        assert not ConsolidationRun.objects.for_tenant(tenant_a).exists()

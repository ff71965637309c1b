"""The embedding backlog: drained in batches by tasks, counted by embedding_backlog."""

from __future__ import annotations

import numpy as np
import pytest

from core.embedding import get_embedder
from episodic.models import Episode
from episodic.passages import embedding_text
from episodic.selectors import embedding_backlog, episodic_stats
from episodic.tasks import embed_backlog, embed_backlog_for_tenant, embed_pending, tenants_with_backlog
from tenants.scope import tenant_scope
from tests.episodic.conftest import item

pytestmark = pytest.mark.django_db


def _backlog(tenant) -> int:
    with tenant_scope(tenant):
        return embedding_backlog(tenant=tenant)


def test_backlog_counts_episodes_without_embedding(append, tenant_a, tenant_b) -> None:
    append(tenant_a, [item(f"e{i}") for i in range(5)])
    append(tenant_b, [item("b", subject="bob")])
    assert _backlog(tenant_a) == 5
    assert _backlog(tenant_b) == 1


def test_drain_embeds_in_batches_with_the_configured_embedder(append, tenant_a) -> None:
    stored = append(tenant_a, [item(f"event about topic {i}") for i in range(10)])
    report = embed_pending(tenant=tenant_a, batch_size=4, max_batches=2)
    assert (report.embedded, report.batches, report.remaining) == (8, 2, True)
    assert _backlog(tenant_a) == 2
    embed_pending(tenant=tenant_a, batch_size=4)
    assert _backlog(tenant_a) == 0
    with tenant_scope(tenant_a):
        first = Episode.objects.for_tenant(tenant_a).get(pk=stored[0].pk)
    expected = get_embedder().embed(["event about topic 0"])[0]
    assert np.allclose(np.asarray(first.embedding), expected, atol=1e-6)


def test_fan_out_reaches_every_tenant_with_a_backlog_and_drains_it(append, tenant_a, tenant_b, ctx_b) -> None:
    append(tenant_a, [item(f"e{i}") for i in range(3)])
    assert tenants_with_backlog() == [str(tenant_a.id)]
    assert embed_backlog.delay().get() == 1
    assert _backlog(tenant_a) == 0
    assert tenants_with_backlog() == []


def test_task_hands_a_big_backlog_to_a_follow_up_task(append, tenant_a, monkeypatch) -> None:
    import episodic.tasks as tasks

    monkeypatch.setattr(tasks, "MAX_BATCHES_PER_RUN", 1)
    monkeypatch.setattr(tasks, "EMBED_BATCH", 2)
    monkeypatch.setattr(tasks.embed_pending, "__kwdefaults__", {"batch_size": 2, "max_batches": 1})
    append(tenant_a, [item(f"e{i}") for i in range(5)])
    embed_backlog_for_tenant.delay(str(tenant_a.id))  # eager: the follow-ups run inline
    assert _backlog(tenant_a) == 0


def test_tool_event_without_content_is_embedded_from_its_payload(append, tenant_a) -> None:
    [episode] = append(tenant_a, [item("", kind="tool_call", payload={"tool": "lookup_order", "id": 7})])
    assert embedding_text(episode) == 'tool_call {"id": 7, "tool": "lookup_order"}'


def test_stats_report_backlog_and_lag(append, tenant_a) -> None:
    append(tenant_a, [item("a"), item("b", session="s-2")])
    with tenant_scope(tenant_a):
        stats = episodic_stats(tenant=tenant_a)
    assert (stats.episodes, stats.sessions, stats.open_sessions, stats.embedding_backlog) == (2, 2, 2, 2)
    assert stats.oldest_pending_created_at is not None

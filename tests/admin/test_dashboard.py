"""The memory dashboard's figures come from the data: growth per week, triggers per day, hit rate per
conversation, backlogs; and its pages cost a fixed number of queries, however much data there is."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from consolidation.models import ConsolidationRun
from dashboard.selectors import (
    backlogs,
    consolidation_triggers,
    memory_growth,
    memory_hit_rates,
    subject_facts,
    subject_timeline,
)
from episodic.models import Episode, Session
from router.models import ContextFeedback, ContextTrace
from tenants.scope import tenant_scope
from tests.admin.test_review_and_audit import _pending
from tests.factories.admin import Memory, build_history

pytestmark = pytest.mark.django_db


def test_growth_counts_episodes_sessions_and_facts_in_the_week_they_occurred(memory_a: Memory) -> None:
    """One time base for every series: when it happened (an episode occurred, a session started, a
    fact was observed), not when Engram stored it: an import of old conversations is old memory."""
    tenant = memory_a.tenant
    now = timezone.now()
    with tenant_scope(tenant):
        session = Session.objects.create(tenant=tenant, external_id="old", subject="zed", started_at=now)
        for weeks_ago, n in ((3, 2), (5, 4)):
            for i in range(n):
                Episode.objects.create(
                    tenant=tenant,
                    session=session,
                    subject="zed",
                    kind="message",
                    content=f"w{weeks_ago} {i}",
                    occurred_at=now - timedelta(weeks=weeks_ago),
                    created_at=now,  # stored today, as an import stores them
                    content_hash=hashlib.sha256(f"w{weeks_ago} {i}".encode()).hexdigest(),
                )
        growth = memory_growth(tenant=tenant, weeks=8, subject="zed")
        everyone = memory_growth(tenant=tenant, weeks=8)
    assert growth.episodes[-1 - 3] == 2 and growth.episodes[-1 - 5] == 4
    assert sum(growth.episodes) == 6 and growth.sessions[-1] == 1
    assert sum(everyone.episodes) == 6 + len(memory_a.episodes)
    # Paris (observed 6 days ago), Berlin (4 days ago) and Acme Corp (2 days ago), by their source episodes.
    assert sum(everyone.facts) == 3
    weeks = {w: n for w, n in zip(everyone.weeks, everyone.facts, strict=True) if n}
    observed = [f.valid_from.date() for f in (memory_a.old_fact, memory_a.new_fact, memory_a.pending_fact) if f]
    assert sum(weeks.values()) == 3 and all(any(w <= d < w + timedelta(days=7) for w in weeks) for d in observed)
    assert [w.weekday() for w in growth.weeks] == [0] * 8


def test_growth_charts_say_their_time_base(op_client: Client, memory_a: Memory) -> None:
    body = op_client.get("/dashboard/tenant-a/").content.decode()
    assert body.count("by the week it happened") >= 2


def test_triggers_are_counted_per_day_and_trigger(memory_a: Memory) -> None:
    tenant = memory_a.tenant
    now = timezone.now()
    with tenant_scope(tenant):
        for days_ago, trigger, created in ((0, "sweep", 2), (0, "sweep", 1), (2, "entity_threshold", 5)):
            ConsolidationRun.objects.create(
                tenant=tenant, trigger=trigger, facts_created=created, created_at=now - timedelta(days=days_ago)
            )
        series = consolidation_triggers(tenant=tenant, days=7)
    assert series.runs["sweep"][-1] == 2 and series.facts["sweep"][-1] == 3
    assert series.runs["entity_threshold"][-3] == 1 and series.facts["entity_threshold"][-3] == 5
    assert series.runs["session_ended"][-2] == 1  # memory_a's run, a day ago
    totals = {row["trigger"]: row["runs"] for row in series.totals}
    assert totals == {"sweep": 2, "entity_threshold": 1, "session_ended": 1}


def test_hit_rate_per_conversation_is_used_over_offered(memory_a: Memory) -> None:
    tenant = memory_a.tenant
    with tenant_scope(tenant):
        trace = memory_a.traces[1]  # conv-2's trace had no feedback yet
        ContextFeedback.objects.create(
            tenant=tenant,
            trace=trace,
            subject="alice",
            session=trace.session,
            offered_count=4,
            used_count=3,
            asked_to_repeat=True,
            outcome="failure",
        )
        extra = ContextTrace.objects.create(tenant=tenant, subject="alice", session=trace.session, policy="h")
        ContextFeedback.objects.create(
            tenant=tenant, trace=extra, subject="alice", session=trace.session, offered_count=6, used_count=0
        )
        hits = memory_hit_rates(tenant=tenant, subject="alice")
    rows = {r["session"]: r for r in hits.conversations}
    assert rows["conv-2"]["hit_rate"] == pytest.approx(3 / 10)
    assert (rows["conv-2"]["traces"], rows["conv-2"]["feedback"], rows["conv-2"]["repeats"]) == (2, 2, 1)
    assert rows["conv-1"]["hit_rate"] == pytest.approx(1 / 4)
    assert hits.overall["hit_rate"] == pytest.approx(4 / 14)
    assert hits.daily[-1] == pytest.approx(4 / 14)


def test_backlogs_count_what_waits(memory_a: Memory) -> None:
    with tenant_scope(memory_a.tenant):
        waiting = backlogs(tenant=memory_a.tenant)
    assert waiting == {
        "embedding": len(memory_a.episodes),
        "consolidation": len(memory_a.episodes),
        "review": 1,
        "erasure": 0,
        "open_sessions": 1,
    }


def test_subject_facts_carry_sources_and_history(memory_a: Memory) -> None:
    with tenant_scope(memory_a.tenant):
        facts = subject_facts(tenant=memory_a.tenant, subject="alice")
    current = {row.fact.attribute: row for row in facts["current"]}
    assert current["city"].fact.value == "Berlin"
    assert [s.episode_id for s in current["city"].sources] == [memory_a.episodes[2].pk]
    assert [row.fact.value for row in facts["pending"]] == ["Acme Corp"]
    assert [row.fact.value for row in facts["past"]] == ["Paris"]
    assert facts["past"][0].changes >= 2  # created, then superseded


def _summary(session: Session, at: Any) -> Episode:
    """The summary consolidation writes when a session ends: an episode at the time of the end."""
    return Episode.objects.create(
        tenant=session.tenant, session=session, subject=session.subject, kind="summary", role="system",
        content=f"summary of {session.external_id}", occurred_at=at,
        content_hash=hashlib.sha256(f"summary {session.external_id}".encode()).hexdigest(),
    )  # fmt: skip


def test_a_session_runs_from_its_first_to_its_last_event_not_to_its_summary(memory_a: Memory) -> None:
    """A demo seeded (or a history imported) today ends its sessions today; their summaries carry that
    time. The timeline draws each session over the events of the conversation only."""
    first_session = memory_a.sessions[0]
    with tenant_scope(memory_a.tenant):
        _summary(first_session, timezone.now())
        timeline = subject_timeline(tenant=memory_a.tenant, subject="alice")
    row = timeline[-1]
    assert row.session == first_session
    assert (row.first_event, row.last_event) == (memory_a.episodes[0].occurred_at, memory_a.episodes[1].occurred_at)


def test_the_session_line_and_the_chart_name_both_ends_with_their_dates(op_client: Client, memory_a: Memory) -> None:
    tenant = memory_a.tenant
    night = timezone.now().replace(hour=23, minute=50, second=0, microsecond=0) - timedelta(days=1)
    with tenant_scope(tenant):
        session = Session.objects.create(
            tenant=tenant, external_id="night", subject="alice", status="ended", outcome="success",
            started_at=night, last_event_at=timezone.now(), ended_at=timezone.now(), episode_count=2,
        )  # fmt: skip
        for minutes, text in ((0, "still up?"), (40, "yes, the migration is running")):
            Episode.objects.create(
                tenant=tenant, session=session, subject="alice", kind="message", role="user", content=text,
                occurred_at=night + timedelta(minutes=minutes), content_hash=hashlib.sha256(text.encode()).hexdigest(),
            )  # fmt: skip
        _summary(session, timezone.now())
    body = op_client.get("/dashboard/tenant-a/subjects/alice/").content.decode()
    end = night + timedelta(minutes=40)
    assert f"{night:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M}" in body  # the line of the session, both dates
    assert f"night: {night:%Y-%m-%d %H:%M} → {end:%Y-%m-%d %H:%M}" in body  # the bar's tip


def test_rates_are_percent_and_the_outcome_pills_have_a_legend(op_client: Client, memory_a: Memory) -> None:
    for url in ("/dashboard/tenant-a/", "/dashboard/tenant-a/subjects/alice/"):
        body = op_client.get(url).content.decode()
        assert 'id="outcome-legend"' in body, url
    tenant_page = op_client.get("/dashboard/tenant-a/").content.decode()
    assert '<b id="hit-rate-overall">25%</b>' in tenant_page  # 1 of 4 offered items used


def test_the_tenant_chooser_names_a_tenant_once(client: Client, tenant_a: Any, tenant_b: Any) -> None:
    from tests.factories.admin import make_operator

    tenant_a.name, tenant_a.slug = "attack", "attack"
    tenant_a.save(update_fields=["name", "slug"])
    operator: Any = make_operator("op-two", tenant_a, tenant_b)
    client.force_login(operator)
    body = client.get("/dashboard/").content.decode()
    item = re.search(r'<li><a href="/dashboard/attack/">attack</a>(.*?)</li>', body)
    assert item is not None and "attack" not in item.group(1)  # the name, not the slug again
    assert tenant_b.slug in body and tenant_b.name in body


def test_subject_timeline_is_newest_first_with_episodes_in_order(memory_a: Memory) -> None:
    with tenant_scope(memory_a.tenant):
        timeline = subject_timeline(tenant=memory_a.tenant, subject="alice")
    assert [row.session.external_id for row in timeline] == ["conv-3", "conv-2", "conv-1"]
    assert [e.content for e in timeline[-1].episodes] == ["I live in Paris these days.", "Noted, Paris it is."]


def _count_queries(client: Client, url: str, django_assert_max_num_queries: Any, limit: int) -> None:
    with django_assert_max_num_queries(limit):
        assert client.get(url).status_code == 200


@pytest.mark.parametrize(
    ("url", "limit"),
    [
        ("/dashboard/tenant-a/", 32),
        ("/dashboard/tenant-a/subjects/alice/", 32),
        ("/admin/semantic/fact/", 14),
        ("/admin/semantic/factchange/", 14),
        ("/admin/semantic/fact/review/", 14),
        ("/admin/episodic/episode/", 14),
        ("/admin/episodic/session/", 16),
        ("/admin/router/contexttrace/", 14),
        ("/admin/router/contextfeedback/", 14),
        ("/admin/consolidation/consolidationrun/", 14),
    ],
)
def test_pages_cost_a_fixed_number_of_queries(
    op_client: Client, memory_a: Memory, django_assert_max_num_queries: Any, url: str, limit: int
) -> None:
    """Pinned with little data and with weeks of it: no query per row."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small:
        assert op_client.get(url).status_code == 200
    build_history(memory_a.tenant, weeks=4)
    for i in range(30):
        _pending(memory_a.tenant, "alice", f"colour_{i}", f"blue {i}")
    with CaptureQueriesContext(connection) as large:
        _count_queries(op_client, url, django_assert_max_num_queries, limit)
    assert len(large.captured_queries) == len(small.captured_queries), [q["sql"][:200] for q in large.captured_queries]


def test_dashboard_pages_render_the_data(op_client: Client, memory_a: Memory) -> None:
    build_history(memory_a.tenant, weeks=3)
    tenant_page = op_client.get("/dashboard/tenant-a/").content.decode()
    assert tenant_page.count('<svg class="chart"') == 5
    assert "h-dan-0-0" in tenant_page  # a conversation in the hit-rate table
    subject_page = op_client.get("/dashboard/tenant-a/subjects/alice/").content.decode()
    assert "I live in Paris these days." in subject_page
    assert f"/admin/episodic/episode/{memory_a.episodes[2].pk}/change/" in subject_page  # Berlin's source
    assert f"/admin/semantic/factchange/?fact={memory_a.new_fact.id}" in subject_page  # its history
    assert "failure" in subject_page and "success" in subject_page


def test_subject_search_box_opens_the_subject(op_client: Client, memory_a: Memory) -> None:
    response = op_client.get("/dashboard/tenant-a/?subject=alice")
    assert response.status_code == 302 and response["Location"] == "/dashboard/tenant-a/subjects/alice/"


def test_the_pages_say_what_the_hit_rate_counts_and_when_a_table_is_cut(op_client: Client, memory_a: Memory) -> None:
    build_history(memory_a.tenant, weeks=8)
    with tenant_scope(memory_a.tenant):
        conversations = ContextFeedback.objects.values("session", "subject").distinct().count()
    assert conversations > 20
    page = op_client.get("/dashboard/tenant-a/")
    body = page.content.decode()
    assert len(page.context["hits"].conversations) == 20
    assert f"the 20 most recent of {conversations} conversations" in body
    assert 'id="hit-rate-help"' in body and "used" in body and "offered" in body


def test_the_subject_header_names_the_first_and_last_day_and_the_sessions_left_out(
    op_client: Client, memory_a: Memory
) -> None:
    build_history(memory_a.tenant, subjects=("alice",), weeks=10)
    with tenant_scope(memory_a.tenant):
        sessions = list(Session.objects.filter(subject="alice").order_by("-started_at"))
    shown = sessions[:20]
    body = op_client.get("/dashboard/tenant-a/subjects/alice/").content.decode()
    first, last = shown[-1].started_at, shown[0].last_event_at or shown[0].started_at
    assert f"{first:%Y-%m-%d} → {last:%Y-%m-%d}" in body
    assert f"the 20 latest of {len(sessions)} sessions" in body

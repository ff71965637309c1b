"""The support-agent demo: the scripted agent with memory on asks for less of what it was told, the
PostgreSQL 15 -> 16 migration becomes a supersession, seeding is idempotent, the comparison command
reports and cleans up. Runs a part of the script (the whole one takes minutes) against the live service."""

from __future__ import annotations

import dataclasses
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone
from pytest_django.live_server_helper import LiveServer

from consolidation.models import ConsolidationRun
from demo import script
from demo.agent import ScriptedAgent, session_id, totals
from demo.runner import demo_start, engram_for, seed_demo
from demo.script import ANA, BEN, USERS
from episodic.models import Episode, EpisodeKind, Session
from router.models import ContextFeedback
from semantic.models import Fact
from tenants.models import Tenant
from tenants.scope import tenant_scope
from tests.conftest import TenantContext

pytestmark = [pytest.mark.live, pytest.mark.slow]

# Ana's first seven conversations: her setup, then the migration to PostgreSQL 16, then a question
# that needs the new version.
ANA_PART = dataclasses.replace(ANA, conversations=ANA.conversations[:7])
BEN_PART = dataclasses.replace(BEN, conversations=BEN.conversations[:2])


def test_the_script_is_well_formed() -> None:
    assert len(USERS) == 3
    for user in USERS:
        assert len(user.conversations) == 10
        assert {c.topic for c in user.conversations} == {"billing", "technical", "feature_request"}
        keys = {f.key for f in user.facts}
        for conv in user.conversations:
            assert len(conv.turns) >= 2
            for turn in conv.turns:
                assert set(turn.needs) <= keys and set(turn.says) <= keys
                for key in turn.says:
                    fact = next(u for u in (*conv.updates, *user.facts) if u.key == key)
                    assert fact.sentence in turn.text


def test_memory_off_is_deterministic_and_asks_again() -> None:
    first = ScriptedAgent(None, start=demo_start()).run([ANA_PART])
    second = ScriptedAgent(None, start=demo_start()).run([ANA_PART])
    assert first == second
    off = first[0]
    assert off.asked_known > 0 and off.offered == 0 and off.conversations == 7


def test_memory_on_remembers_across_conversations_and_follows_the_migration(
    live_server: LiveServer, ctx_a: TenantContext
) -> None:
    off = ScriptedAgent(None, start=demo_start()).run([ANA_PART])[0]
    with engram_for(ctx_a.tenant, url=live_server.url) as engram:
        on = ScriptedAgent(engram, start=demo_start()).run([ANA_PART])[0]
    assert on.asked_known < off.asked_known
    assert on.offered > 0 and 0 < on.used <= on.offered
    assert on.tokens_sent > 0
    tenant = ctx_a.tenant
    with tenant_scope(tenant):
        databases = dict(
            Fact.objects.for_tenant(tenant)
            .filter(subject="ana.ruiz", attribute="database")
            .values_list("value", "status")
        )
        assert databases.get("PostgreSQL 16") == "active"
        assert databases.get("PostgreSQL 15") == "superseded"
        assert ConsolidationRun.objects.for_tenant(tenant).count() >= 7
        assert ContextFeedback.objects.for_tenant(tenant).filter(used_count__gt=0).exists()
        assert Episode.objects.for_tenant(tenant).filter(session__external_id=session_id(ANA, 0)).count() >= 8


def test_with_memory_the_agent_answers_with_what_it_was_told_in_earlier_conversations(
    live_server: LiveServer, ctx_a: TenantContext
) -> None:
    off = ScriptedAgent(None, start=demo_start()).run([ANA_PART])[0]
    with engram_for(ctx_a.tenant, url=live_server.url) as engram:
        on = ScriptedAgent(engram, start=demo_start()).run([ANA_PART])[0]
    # What it had been told before, the agent without memory asks for again; with memory it answers
    # with what the context holds and asks for the rest.
    assert off.recalled == 0 and off.told_before == off.asked_known > 0
    assert on.told_before == off.told_before
    assert on.recalled > 0 and on.recalled + on.asked_known == on.told_before
    tenant = ctx_a.tenant
    with tenant_scope(tenant):
        # The conversation after the migration: the answer quotes what the user said, the new version.
        replies = list(
            Episode.objects.for_tenant(tenant)
            .filter(session__external_id=session_id(ANA, 6), role="assistant")
            .order_by("id")
            .values_list("content", flat=True)
        )
    [answer] = [r for r in replies if "PostgreSQL" in r]
    assert answer.startswith("From what you told me: ") and "PostgreSQL 16" in answer
    assert "PostgreSQL 15" not in answer


def test_seed_demo_is_idempotent(
    live_server: LiveServer, ctx_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(script, "USERS", (BEN_PART,))
    out = StringIO()
    call_command("seed_demo", "--tenant", ctx_a.tenant.slug, "--url", live_server.url, stdout=out)
    assert "Seeded 2 conversations for 1 users" in out.getvalue()
    tenant = ctx_a.tenant
    with tenant_scope(tenant):
        episodes = Episode.objects.for_tenant(tenant).count()
        assert episodes > 0
        # Each conversation ends when its script does (two minutes after its last turn), and its
        # summaries are dated then: not at the moment of the seeding.
        for session in Session.objects.for_tenant(tenant):
            turns = Episode.objects.for_tenant(tenant).filter(session=session).exclude(kind=EpisodeKind.SUMMARY)
            last_turn = max(e.occurred_at for e in turns)
            assert session.ended_at == last_turn + timedelta(minutes=2), session.external_id
            summaries = Episode.objects.for_tenant(tenant).filter(session=session, kind=EpisodeKind.SUMMARY)
            assert all(e.occurred_at == session.ended_at for e in summaries)
            assert session.ended_at < timezone.now() - timedelta(days=1)
    again = StringIO()
    call_command("seed_demo", "--tenant", tenant.slug, "--url", live_server.url, stdout=again)
    assert "already there" in again.getvalue()
    assert seed_demo(tenant=tenant, url=live_server.url, users=(BEN_PART,)) is None
    with tenant_scope(tenant):
        assert Episode.objects.for_tenant(tenant).count() == episodes
        # The short-lived keys the seeding used are revoked.
        from tenants.models import ApiKey

        assert not ApiKey.objects.for_tenant(tenant).filter(name="demo-seed", revoked_at__isnull=True).exists()


def test_demo_compare_reports_and_removes_its_tenant(
    live_server: LiveServer, ctx_a: TenantContext, monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setattr(script, "USERS", (BEN_PART,))
    before = set(Tenant.objects.values_list("slug", flat=True))
    out = StringIO()
    call_command("demo_compare", "--url", live_server.url, "--no-write", stdout=out)
    table = out.getvalue()
    assert "| ben.okafor |" in table and "| **overall** |" in table
    assert set(Tenant.objects.values_list("slug", flat=True)) == before


def test_totals_add_up() -> None:
    stats = ScriptedAgent(None, start=demo_start()).run([ANA_PART, BEN_PART])
    overall = totals(stats)
    assert overall.needed == sum(s.needed for s in stats)
    assert overall.tokens_sent == sum(s.tokens_sent for s in stats)


def test_demo_compare_writes_outside_the_docs_unless_asked() -> None:
    from demo.management.commands.demo_compare import PUBLISHED, Command

    parser = Command().create_parser("manage.py", "demo_compare")
    default = parser.parse_args([])
    assert not default.docs
    assert "docs" not in Path(default.output).relative_to(settings.BASE_DIR).parts
    assert parser.parse_args(["--docs"]).docs and PUBLISHED.parts[-3:] == ("docs", "benchmarks", "demo.md")
    with pytest.raises(CommandError):
        call_command("demo_compare", "--docs", "--output", "x.md")

"""Decay, forgetting, archiving and restore, export and import, schedules, the sweep, stats."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django_celery_beat.models import PeriodicTask

from consolidation import lifecycle, services
from consolidation.models import ArchiveManifest, ConsolidationRun, RunTrigger
from consolidation.schedules import SCHEDULES
from consolidation.selectors import consolidation_stats
from consolidation.tasks import consolidation_sweep
from core.errors import Conflict
from episodic.models import Episode, Session
from privacy.export import tenant_export, tenant_import
from semantic.models import ActorType, Fact, FactChange, FactChangeKind, FactSource, FactStatus
from semantic.services import fact_confirm
from semantic.types import Actor
from tenants.scope import tenant_scope
from tests.consolidation.conftest import NOW, make_episode, make_session
from tests.factories.tenants import TenantFactory
from tests.privacy.test_erasure import seed_everywhere

pytestmark = pytest.mark.django_db


def _fact(tenant, attribute: str) -> Fact:
    with tenant_scope(tenant):
        return Fact.objects.for_tenant(tenant).get(attribute=attribute, status__in=["active", "expired"])


def _consolidated(tenant, text: str) -> None:
    session = make_session(tenant, "s-decay")
    make_episode(tenant, session, text)
    services.consolidate(tenant=tenant, run=services.run_start(tenant=tenant, trigger=RunTrigger.MANUAL))


def test_confidence_halves_per_category_half_life_without_compounding_and_confirmation_restores(tenant_a) -> None:
    _consolidated(tenant_a, "Our deadline is June 30. The sync job keeps failing.")
    issue, deadline = _fact(tenant_a, "known_issues"), _fact(tenant_a, "deadline_date")
    start_issue, start_deadline = issue.confidence, deadline.confidence
    later = issue.last_confirmed_at + timedelta(days=30)  # known_issues half-life is 30 days
    lifecycle.facts_decay_and_forget(tenant=tenant_a, now=later)
    lifecycle.facts_decay_and_forget(tenant=tenant_a, now=later)  # twice: same answer, not squared
    assert _fact(tenant_a, "known_issues").confidence == pytest.approx(start_issue / 2, abs=1e-3)
    assert _fact(tenant_a, "deadline_date").confidence == pytest.approx(start_deadline * 0.5 ** (30 / 180), abs=1e-3)
    with tenant_scope(tenant_a):
        changes = FactChange.objects.for_tenant(tenant_a).filter(fact=issue, kind=FactChangeKind.DECAYED)
        assert changes.count() == 1
        confirmed = fact_confirm(tenant=tenant_a, fact_id=issue.id, actor=Actor(type=ActorType.OPERATOR, id="op"))
    assert confirmed.confidence > start_issue / 2
    # After confirmation decay starts again from the restored value.
    lifecycle.facts_decay_and_forget(tenant=tenant_a, now=confirmed.last_confirmed_at + timedelta(days=1))
    assert _fact(tenant_a, "known_issues").confidence == pytest.approx(confirmed.confidence * 0.5 ** (1 / 30), abs=1e-3)


def test_facts_decayed_below_the_floor_or_unconfirmed_too_long_expire_with_history(tenant_a) -> None:
    _consolidated(tenant_a, "The sync job keeps failing. My e-mail address is a@b.example.")
    issue = _fact(tenant_a, "known_issues")
    # Five half-lives of a known issue: 0.7 / 32 < 0.1 floor.
    report = lifecycle.facts_decay_and_forget(tenant=tenant_a, now=issue.last_confirmed_at + timedelta(days=150))
    assert report.expired_below_floor == 1 and report.expired_unconfirmed == 0
    assert _fact(tenant_a, "known_issues").status == FactStatus.EXPIRED
    report = lifecycle.facts_decay_and_forget(tenant=tenant_a, now=issue.last_confirmed_at + timedelta(days=400))
    assert report.expired_unconfirmed == 1
    email = _fact(tenant_a, "email")
    assert email.status == FactStatus.EXPIRED and email.valid_to is not None
    with tenant_scope(tenant_a):
        reasons = set(
            FactChange.objects.for_tenant(tenant_a).filter(kind=FactChangeKind.EXPIRED).values_list("reason", flat=True)
        )
    assert reasons == {"confidence decayed below 0.1", "not confirmed in 365 days"}


def test_old_episodes_move_to_monthly_archives_and_restore_with_provenance(tenant_a) -> None:
    session = make_session(tenant_a, "s-old")
    old = [
        make_episode(tenant_a, session, f"We use Tool{i}.", occurred_at=NOW - timedelta(days=200 + i * 40))
        for i in range(3)
    ]
    recent = make_episode(tenant_a, session, "We use Recent.")
    services.consolidate(tenant=tenant_a, run=services.run_start(tenant=tenant_a, trigger=RunTrigger.MANUAL))
    report = lifecycle.episodes_archive(tenant=tenant_a)
    assert report.episodes == 3 and len(report.months) == 3
    with tenant_scope(tenant_a):
        assert list(Episode.objects.for_tenant(tenant_a).values_list("id", flat=True)) == [recent.id]
        manifests = list(ArchiveManifest.objects.for_tenant(tenant_a).order_by("month"))
        tool0 = Fact.objects.for_tenant(tenant_a).get(value="Tool0")
        assert not FactSource.objects.for_tenant(tenant_a).filter(fact=tool0).exists()
    assert [m.episode_count for m in manifests] == [1, 1, 1] and all(m.sha256 and m.bytes for m in manifests)
    rows = list(lifecycle.iter_archive_rows(tenant=tenant_a))
    assert {r["id"] for r in rows} == {e.id for e in old}
    assert next(r for r in rows if r["id"] == old[0].id)["fact_ids"] == [str(tool0.id)]
    # Archiving again is a no-op; a second batch for the same month rewrites the file with both.
    assert lifecycle.episodes_archive(tenant=tenant_a).episodes == 0
    month = manifests[0].month
    out = io.StringIO()
    call_command("restore_archive", "--tenant", tenant_a.slug, "--month", month, stdout=out)
    assert "1 episodes restored" in out.getvalue()
    with tenant_scope(tenant_a):
        assert Episode.objects.for_tenant(tenant_a).count() == 2
        assert not ArchiveManifest.objects.for_tenant(tenant_a).filter(month=month).exists()
        restored_id = next(r["id"] for r in rows if r["id"] in {e.id for e in old} and r["occurred_at"][:7] == month)
        assert FactSource.objects.for_tenant(tenant_a).filter(episode_id=restored_id).exists()


def test_export_then_import_into_an_empty_tenant_round_trips_every_layer(tenant_a) -> None:
    seed_everywhere(tenant_a, "u-one")
    seed_everywhere(tenant_a, "u-two", archived=False)
    buffer = io.BytesIO()
    counts = tenant_export(tenant=tenant_a, out=buffer)
    assert counts["archived_episode"] >= 1 and counts["semantic.Fact"] > 0
    target = TenantFactory(slug="imported")
    imported = tenant_import(tenant=target, fh=io.BytesIO(buffer.getvalue()))
    assert (
        imported["episodic.Episode"] + imported["archived_episode"]
        == counts["episodic.Episode"] + counts["archived_episode"]
    )

    def shape(tenant) -> dict[str, object]:
        with tenant_scope(tenant):
            return {
                "episodes": sorted(
                    Episode.objects.for_tenant(tenant).values_list("subject", "content", "session__external_id")
                ),
                "facts": sorted(
                    Fact.objects.for_tenant(tenant).values_list("subject", "entity", "attribute", "value", "status")
                ),
                "sources": sorted(FactSource.objects.for_tenant(tenant).values_list("fact__value", "episode__content")),
                "changes": sorted(
                    FactChange.objects.for_tenant(tenant).values_list("fact__value", "kind", "new_value")
                ),
                "sessions": sorted(Session.objects.for_tenant(tenant).values_list("external_id", "subject", "status")),
                "superseded_by": sorted(
                    Fact.objects.for_tenant(tenant)
                    .filter(superseded_by__isnull=False)
                    .values_list("value", "superseded_by__value")
                ),
            }

    # The source's archived episodes come back hot in the import: compare after restoring them here.
    call_command("restore_archive", "--tenant", tenant_a.slug, "--all", stdout=io.StringIO())
    assert shape(target) == shape(tenant_a)
    with pytest.raises(Conflict, match="not empty"):
        tenant_import(tenant=target, fh=io.BytesIO(buffer.getvalue()))


def test_export_and_import_commands(tenant_a, tmp_path) -> None:
    seed_everywhere(tenant_a, "u-one", archived=False)
    path = tmp_path / "t.jsonl.gz"
    out = io.StringIO()
    call_command("export_tenant", "--tenant", tenant_a.slug, "--out", str(path), "--no-progress", stdout=out)
    assert "episodic.Episode" in out.getvalue()
    target = TenantFactory(slug="cmd-import")
    call_command("import_tenant", "--tenant", target.slug, "--in", str(path), stdout=io.StringIO())
    with tenant_scope(target):
        assert Episode.objects.for_tenant(target).count() == 3


def test_setup_schedules_is_idempotent_and_keeps_operator_edits(db) -> None:
    call_command("setup_schedules", stdout=io.StringIO())
    names = {s.name for s in SCHEDULES}
    assert set(PeriodicTask.objects.filter(name__in=names).values_list("name", flat=True)) == names
    sweep = PeriodicTask.objects.get(name="engram: consolidation sweep")
    assert sweep.task == "consolidation.tasks.consolidation_sweep" and sweep.interval.every == 180
    sweep.enabled = False
    sweep.save()
    out = io.StringIO()
    call_command("setup_schedules", stdout=out)
    assert PeriodicTask.objects.filter(name__in=names).count() == len(names)
    assert not PeriodicTask.objects.get(name=sweep.name).enabled and "kept" in out.getvalue()
    call_command("setup_schedules", "--reset", stdout=io.StringIO())
    assert PeriodicTask.objects.get(name=sweep.name).enabled
    tasks = set(PeriodicTask.objects.filter(name__in=names).values_list("task", flat=True))
    assert {
        "episodic.tasks.embed_backlog",
        "procedural.tasks.discover_procedures",
        "consolidation.tasks.archive_episodes",
    } <= tasks


def test_sweep_triggers_on_the_entity_threshold_and_on_old_backlogs(tenant_a, tenant_b) -> None:
    session = make_session(tenant_a, "s-1", "u-ent")
    for i in range(5):
        make_episode(tenant_a, session, f"Question {i} about Stripe.", entities=["stripe"])
    other = make_session(tenant_b, "s-1", "u-few")
    make_episode(tenant_b, other, "We use Kafka.")
    assert consolidation_sweep.delay().get() == 1  # tenant B: one young episode, no trigger
    with tenant_scope(tenant_a):
        run = ConsolidationRun.objects.for_tenant(tenant_a).get()
    assert run.trigger == RunTrigger.ENTITY_THRESHOLD and run.entity == "stripe" and run.subject == "u-ent"
    assert "5+ episodes of subject u-ent in 7 days mention stripe" == run.reason
    assert services.sweep_decision(tenant=tenant_a) is None  # consolidated: no trigger left
    later = NOW + timedelta(hours=2)
    assert services.sweep_decision(tenant=tenant_b, now=later)[0] == RunTrigger.SWEEP


def test_stats_report_ratio_backlog_cost_archives_and_growth(tenant_a) -> None:
    session = make_session(tenant_a, "s-1", "u-stats")
    for i in range(4):
        make_episode(tenant_a, session, f"We use Tool{i}." if i % 2 else "Thanks, that helps.")
    services.consolidate(tenant=tenant_a, run=services.run_start(tenant=tenant_a, trigger=RunTrigger.MANUAL))
    make_episode(tenant_a, session, "One more.")
    stats = consolidation_stats(tenant=tenant_a)
    assert stats["consolidation_ratio"] == 2.0 and stats["facts_created"] == 2
    assert stats["backlog"]["consolidation"] == 1
    assert stats["extractor_cost"]["llm_calls"] == 0
    assert stats["runs"]["by_status"]["succeeded"] == 1
    [growth] = [g for g in stats["growth_per_subject_week"] if g["subject"] == "u-stats"]
    assert growth["rows"] == 5 + 2 and growth["bytes"] > 0

"""Episodes to facts: each episode once, crash-safe, one consolidation per tenant at a time."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections, transaction
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from consolidation import services
from consolidation.models import ConsolidationRun, ConsolidationWatermark, RunStatus, RunTrigger
from consolidation.tasks import consolidate_session, consolidate_tenant
from episodic.models import Episode
from semantic.models import Fact, FactSource, FactStatus
from tenants.scope import tenant_scope
from tests.consolidation.conftest import make_episode, make_session
from tests.factories.tenants import TenantFactory

pytestmark = pytest.mark.django_db


def _facts(tenant) -> list[Fact]:
    with tenant_scope(tenant):
        return list(Fact.objects.for_tenant(tenant).order_by("attribute", "value"))


def test_facts_appear_after_the_session_ends_with_their_sources(tenant_a) -> None:
    session = make_session(tenant_a, "s-1", "u-ana", ended=True)
    e1 = make_episode(tenant_a, session, "Hi, my name is Ana Ribeiro. We use PostgreSQL 15 and Airflow.")
    make_episode(tenant_a, session, "Sure, happy to help with Airflow.", role="assistant")
    e3 = make_episode(tenant_a, session, "My e-mail address is ana@lumen.example.")
    run_id = consolidate_session.delay(str(tenant_a.id), session.id).get()

    facts = {(f.attribute, f.value): f for f in _facts(tenant_a)}
    assert set(facts) == {
        ("name", "Ana Ribeiro"),
        ("database", "PostgreSQL 15"),
        ("uses", "Airflow"),
        ("email", "ana@lumen.example"),
    }
    assert all(f.subject == "u-ana" and f.entity == "u-ana" and f.status == FactStatus.ACTIVE for f in facts.values())
    with tenant_scope(tenant_a):
        assert set(
            FactSource.objects.for_tenant(tenant_a)
            .filter(fact=facts[("email", "ana@lumen.example")])
            .values_list("episode_id", flat=True)
        ) == {e3.id}
        assert FactSource.objects.for_tenant(tenant_a).filter(fact=facts[("uses", "Airflow")], episode=e1).exists()
        run = ConsolidationRun.objects.for_tenant(tenant_a).get(pk=run_id)
    assert (run.facts_created, run.candidates, run.extractor) == (4, 4, "rules")
    assert run.llm_calls == 0 and run.cost_usd == 0


def test_a_second_run_reads_nothing_and_confirms_nothing(tenant_a, recording) -> None:
    session = make_session(tenant_a, "s-1")
    for i in range(5):
        make_episode(tenant_a, session, f"We use Tool{i}.")
    consolidate_tenant.delay(str(tenant_a.id), RunTrigger.MANUAL).get()
    before = [(f.id, f.confirmation_count) for f in _facts(tenant_a)]
    second = consolidate_tenant.delay(str(tenant_a.id), RunTrigger.MANUAL).get()
    with tenant_scope(tenant_a):
        assert ConsolidationRun.objects.for_tenant(tenant_a).get(pk=second).episodes_read == 0
    assert [(f.id, f.confirmation_count) for f in _facts(tenant_a)] == before
    assert set(recording.seen.values()) == {1}


def test_a_crash_mid_run_then_redelivery_skips_nothing_and_duplicates_nothing(tenant_a, recording) -> None:
    session = make_session(tenant_a, "s-1")
    episodes = [
        make_episode(tenant_a, session, f"We use Tool{i} and my favourite colour is Colour{i}.") for i in range(7)
    ]
    run = services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP, task_id="task-1")
    recording.fail_on_call = 2  # the second batch dies after the first committed
    with pytest.raises(RuntimeError, match="worker died"):
        services.consolidate(tenant=tenant_a, run=run, batch_size=3)
    with tenant_scope(tenant_a):
        failed = ConsolidationRun.objects.for_tenant(tenant_a).get(pk=run.pk)
    assert failed.status == RunStatus.FAILED and failed.episodes_read == 3

    # Redelivery: same task id, same run, continues from the watermark.
    recording.fail_on_call = None
    again = services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP, task_id="task-1")
    assert again.pk == run.pk and again.attempts == 2
    done = services.consolidate(tenant=tenant_a, run=again, batch_size=3)
    assert done.status == RunStatus.SUCCEEDED
    with tenant_scope(tenant_a):
        done = ConsolidationRun.objects.for_tenant(tenant_a).get(pk=run.pk)
        assert done.episodes_read == 7
        # Seven tools (multi-valued) and seven favourite colours, each superseding the one before.
        assert (done.facts_created, done.facts_superseded) == (8, 6)
        wm = ConsolidationWatermark.objects.for_tenant(tenant_a).get()
    assert all(wm.is_done(e.id) for e in episodes)
    facts = _facts(tenant_a)
    keys = [(f.entity, f.attribute, f.value_key) for f in facts]
    assert len(keys) == len(set(keys)) == 14
    # The batch that died was read twice (once rolled back), every other episode once, none skipped.
    assert set(recording.seen) == {e.id for e in episodes}


def test_an_unreachable_model_leaves_the_backlog_for_the_next_run(tenant_a, settings) -> None:
    from consolidation.extractors import base

    class Down:
        name = "down"

        def extract(self, **kwargs):
            raise base.ExtractorUnavailable("model unavailable after 4 attempts: rate limited")

        def summarise(self, **kwargs):
            raise AssertionError("not called")

    session = make_session(tenant_a, "s-1")
    make_episode(tenant_a, session, "We use Kafka.")
    base.get_extractor.cache_clear()
    original = base.get_extractor
    try:
        services.get_extractor = lambda: Down()  # type: ignore[assignment]
        run = services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP)
        result = services.consolidate(tenant=tenant_a, run=run)
    finally:
        services.get_extractor = original
    assert result.status == RunStatus.FAILED and "rate limited" in result.error
    assert _facts(tenant_a) == []
    run2 = services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP)
    assert services.consolidate(tenant=tenant_a, run=run2).status == RunStatus.SUCCEEDED
    assert [(f.attribute, f.value) for f in _facts(tenant_a)] == [("uses", "Kafka")]


def test_a_candidate_whose_value_is_a_fragment_never_becomes_a_fact(tenant_a, monkeypatch) -> None:
    from consolidation.extractors.base import ExtractionResult
    from semantic.types import FactCandidate

    class Noisy:
        """An extractor (a model, say) that returns fragments beside a good value."""

        name = "noisy"

        def extract(self, *, tenant, subject, episodes):
            def candidate(attribute: str, value: str) -> FactCandidate:
                return FactCandidate(
                    subject=subject,
                    entity=subject,
                    attribute=attribute,
                    value=value,
                    statement=f"{subject} {attribute} {value}.",
                    category="preferences",
                    confidence=0.8,
                    source_episode_ids=[e.id for e in episodes],
                )

            return ExtractionResult(
                candidates=[candidate("likes", "13)"), candidate("uses", "want"), candidate("likes", "kayaking")]
            )

        def summarise(self, **kwargs):
            raise AssertionError("not called")

    session = make_session(tenant_a, "s-1")
    make_episode(tenant_a, session, "Honestly I like (13) of them. I like kayaking.")
    monkeypatch.setattr(services, "get_extractor", lambda: Noisy())
    run = services.consolidate(tenant=tenant_a, run=services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP))
    assert [(f.attribute, f.value) for f in _facts(tenant_a)] == [("likes", "kayaking")]
    assert (run.candidates, run.facts_created, run.candidates_rejected) == (3, 1, 2)
    assert [p["error"] for p in run.problems] == ["candidate value is a fragment"] * 2


def test_summary_episode_is_written_once_and_never_extracted(tenant_a) -> None:
    session = make_session(tenant_a, "s-1", ended=True)
    make_episode(tenant_a, session, "Our deadline is June 30. We use Terraform.")
    consolidate_session.delay(str(tenant_a.id), session.id).get()
    consolidate_session.delay(str(tenant_a.id), session.id).get()
    with tenant_scope(tenant_a):
        summaries = list(Episode.objects.for_tenant(tenant_a).filter(kind="summary"))
    assert len(summaries) == 1 and "deadline is June 30" in summaries[0].content
    assert sorted(f.attribute for f in _facts(tenant_a)) == ["deadline_date", "uses"]


def test_a_session_whose_working_notes_were_summarised_still_gets_its_summary(tenant_a) -> None:
    session = make_session(tenant_a, "s-notes", ended=True)
    make_episode(tenant_a, session, "Our deadline is June 30. We use Terraform.")
    make_episode(tenant_a, session, "Working notes: plan is to migrate the state file.", kind="summary", role="system")
    consolidate_session.delay(str(tenant_a.id), session.id).get()
    with tenant_scope(tenant_a):
        summaries = list(Episode.objects.for_tenant(tenant_a).filter(kind="summary").order_by("id"))
    assert len(summaries) == 2
    assert summaries[1].external_id == services.SUMMARY_EXTERNAL_ID
    assert "deadline is June 30" in summaries[1].content


@hsettings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plan=st.lists(
        st.tuples(st.integers(min_value=0, max_value=6), st.integers(min_value=1, max_value=4)), min_size=1, max_size=5
    )
)
def test_every_episode_is_consolidated_exactly_once_whatever_the_interleaving(plan, recording) -> None:
    """Invariant: appends and runs in any order, any batch size: each episode read exactly once."""
    tenant = TenantFactory()
    recording.seen = {}
    session = make_session(tenant, "s")
    written: list[int] = []
    for appended, batch_size in plan:
        written += [make_episode(tenant, session, f"We use T{len(written) + i}.").id for i in range(appended)]
        run = services.run_start(tenant=tenant, trigger=RunTrigger.SWEEP)
        services.consolidate(tenant=tenant, run=run, batch_size=batch_size)
    assert recording.seen == dict.fromkeys(written, 1)


@pytest.mark.django_db(transaction=True)
def test_an_episode_committed_late_below_the_watermark_is_still_consolidated(tenant_a, recording) -> None:
    """A writer takes a lower episode id, then stays open while a higher id commits and is
    consolidated; when it commits, its episode is still consolidated, once."""
    session = make_session(tenant_a, "s-1")
    took_id, release = threading.Event(), threading.Event()
    late: list[int] = []

    def slow_writer() -> None:
        try:
            with transaction.atomic():
                late.append(make_episode(tenant_a, session, "We use Beta.").id)
                took_id.set()
                release.wait(30)
        finally:
            connections.close_all()

    writer = threading.Thread(target=slow_writer)
    writer.start()
    assert took_id.wait(30)
    high = make_episode(tenant_a, session, "We use Alpha.")
    assert high.id > late[0]
    services.consolidate(tenant=tenant_a, run=services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP))
    services.consolidate(tenant=tenant_a, run=services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP))
    assert recording.seen == {high.id: 1}
    with tenant_scope(tenant_a):
        wm = ConsolidationWatermark.objects.for_tenant(tenant_a).get()
    # The open writer holds the watermark below its id.
    assert wm.last_episode_id < late[0] and wm.done_above == [high.id]
    release.set()
    writer.join(30)
    services.consolidate(tenant=tenant_a, run=services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP))
    services.consolidate(tenant=tenant_a, run=services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP))
    assert recording.seen == {high.id: 1, late[0]: 1}
    with tenant_scope(tenant_a):
        wm = ConsolidationWatermark.objects.for_tenant(tenant_a).get()
    assert wm.last_episode_id == high.id and wm.done_above == []
    assert sorted(f.value for f in _facts(tenant_a)) == ["Alpha", "Beta"]


@pytest.mark.django_db(transaction=True)
def test_two_workers_on_one_tenant_take_turns_and_share_the_backlog(tenant_a, recording) -> None:
    session = make_session(tenant_a, "s-1")
    ids = [make_episode(tenant_a, session, f"We use Tool{i}.").id for i in range(40)]
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            run = services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP)
            services.consolidate(tenant=tenant_a, run=run, batch_size=5)
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert recording.seen == dict.fromkeys(ids, 1)
    with tenant_scope(tenant_a):
        reads = list(ConsolidationRun.objects.for_tenant(tenant_a).values_list("episodes_read", flat=True))
    assert sum(reads) == 40
    assert len(_facts(tenant_a)) == 40
    assert connection.vendor == "postgresql"

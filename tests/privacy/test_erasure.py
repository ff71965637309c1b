"""Erasure of a subject seeded in every location; the registry covers every model; export."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.apps import apps

from consolidation import lifecycle, services
from consolidation.models import ArchiveManifest, ConsolidationRun, RunTrigger
from episodic.aliases import entity_alias_learn, entity_alias_put
from episodic.models import EntityAlias, Episode, Session
from episodic.scratchpad import scratchpad_get, scratchpad_put
from privacy import erasure
from privacy.models import ErasureRequest, ErasureStatus
from privacy.services import erasure_request_create
from procedural.models import Procedure, ProcedureOutcome
from router.models import ContextFeedback, ContextTrace
from semantic.models import ActorType, Fact, FactChange, FactSource
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate
from tenants.models import IdempotencyRecord
from tenants.scope import tenant_scope
from tests.consolidation.conftest import NOW, make_episode, make_session

pytestmark = pytest.mark.django_db

SUBJECT, OTHER = "u-erase", "u-keep"


def test_every_model_with_a_tenant_or_subject_field_is_in_the_erasure_registry() -> None:
    holders = {
        m._meta.label
        for m in apps.get_models()
        if {f.name for f in m._meta.get_fields()} & {"tenant", "subject", "subjects"}
    }
    missing = sorted(holders - erasure.registered_labels())
    assert missing == [], f"add these to privacy/erasure.py (LOCATIONS or NO_SUBJECT_DATA): {missing}"
    assert not set(erasure.NO_SUBJECT_DATA) & {loc.model for loc in erasure.LOCATIONS}


def seed_everywhere(tenant, subject: str, *, archived: bool = True) -> dict[str, object]:
    """One subject's data in every registered location (and an old episode that gets archived)."""
    session = make_session(tenant, f"{subject}-s1", subject, ended=True)
    old_session = make_session(tenant, f"{subject}-s0", subject, ended=True)
    e1 = make_episode(tenant, session, "We use PostgreSQL 16. My e-mail address is x@example.org.", entities=["acme"])
    e2 = make_episode(tenant, session, "Acme runs its billing on Stripe.")
    old = make_episode(tenant, old_session, "I'm living in Porto.", occurred_at=NOW - timedelta(days=400))
    services.consolidate(
        tenant=tenant,
        run=services.run_start(
            tenant=tenant, trigger=RunTrigger.SESSION_ENDED, subject=subject, session_external_id=session.external_id
        ),
    )
    actor = Actor(type=ActorType.API_KEY, id="k")
    with tenant_scope(tenant):
        # A fact about another entity, written without a subject, sourced only from this subject.
        fact_upsert(
            tenant=tenant,
            candidate=FactCandidate(
                subject="",
                entity=f"acme-{subject}",
                attribute="billing_provider",
                value="Stripe",
                statement="Acme bills through Stripe.",
                category="business_context",
                confidence=0.9,
                source_episode_ids=[e2.id],
            ),
            actor=actor,
        )
        scratchpad_put(tenant=tenant, session_external_id=session.external_id, document={"plan": [subject]})
        # A nickname learned from the subject's conversation is the subject's; an operator's alias is not.
        assert entity_alias_learn(tenant=tenant, alias="Mel", entity="Melanie", subject=subject, episode_id=e1.id)
        entity_alias_put(tenant=tenant, alias="AWS", entity="Amazon Web Services")
        trace = ContextTrace.objects.create(
            tenant=tenant, subject=subject, session=session.external_id, query="what db?", policy="heuristic"
        )
        ContextFeedback.objects.create(
            tenant=tenant, trace=trace, subject=subject, session=session.external_id, offered_count=1, used_count=1
        )
        procedure = Procedure.objects.create(tenant=tenant, name=f"p-{subject}", behaviour="be nice")
        ProcedureOutcome.objects.create(
            tenant=tenant, procedure=procedure, session_external_id=session.external_id, episode=e1, applied=True
        )
        IdempotencyRecord.objects.create(
            tenant=tenant,
            key=f"k-{subject}",
            method="POST",
            path="/v1/episodes",
            request_hash="h",
            response_status=201,
            response_body={"subject": subject},
            subjects=[subject],
        )
    lifecycle.facts_decay_and_forget(tenant=tenant)
    if archived:
        report = lifecycle.episodes_archive(tenant=tenant)
        assert report.episodes >= 1
    return {"session": session, "episodes": [e1, e2], "old": old}


def test_erasure_of_a_subject_seeded_everywhere_leaves_zero_rows_and_others_untouched(tenant_a, tenant_b) -> None:
    seed_everywhere(tenant_a, SUBJECT)
    kept = seed_everywhere(tenant_a, OTHER)
    seed_everywhere(tenant_b, SUBJECT)
    # The same fact learnt from another subject and from this one is two facts, one in each memory
    # (issue 40): the other subject's survives the erasure, with its own source.
    with tenant_scope(tenant_a):
        erased_episode = Episode.objects.for_tenant(tenant_a).filter(subject=SUBJECT).order_by("id").first()

        def shared(subject: str, episode_id: int) -> Fact:
            return fact_upsert(
                tenant=tenant_a,
                candidate=FactCandidate(
                    subject=subject,
                    entity="shared-thing",
                    attribute="status",
                    value="live",
                    statement="The shared thing is live.",
                    category="other",
                    confidence=0.9,
                    source_episode_ids=[episode_id],
                ),
                actor=Actor(type=ActorType.API_KEY),
            ).fact

        mixed = shared(OTHER, kept["episodes"][0].id)
        assert shared(SUBJECT, erased_episode.id).pk != mixed.pk
        assert FactSource.objects.for_tenant(tenant_a).filter(fact=mixed).count() == 1
        erased_ids = list(Episode.objects.for_tenant(tenant_a).filter(subject=SUBJECT).values_list("id", flat=True))
    before = erasure.locate(tenant=tenant_a, subject=SUBJECT)
    expected_nonzero = {
        "facts",
        "fact_changes",
        "fact_sources",
        "fact_decay_anchors",
        "procedure_outcomes",
        "context_feedback",
        "context_traces",
        "passages",
        "episodes",
        "sessions",
        "scratchpads",
        "archives",
        "idempotency_records",
        "consolidation_runs",
        "entity_aliases",
    }
    assert {k for k, v in before.items() if v} >= expected_nonzero, before
    other_before = erasure.locate(tenant=tenant_a, subject=OTHER)
    b_before = erasure.locate(tenant=tenant_b, subject=SUBJECT)

    request = erasure_request_create(tenant=tenant_a, subject=SUBJECT, requested_by="test", reason="gdpr")
    done = erasure.erasure_execute(tenant=tenant_a, request_id=str(request.pk))

    assert done is not None and done.status == ErasureStatus.DONE, done.error
    after = erasure.locate(tenant=tenant_a, subject=SUBJECT)
    assert {k: v for k, v in after.items() if v and k != "erasure_requests"} == {}
    assert done.counts["episodes"] == before["episodes"] and done.counts["archives"] == before["archives"]
    # The audit row keeps a hash of the subject id, never the id.
    with tenant_scope(tenant_a):
        audit = ErasureRequest.objects.for_tenant(tenant_a).get(pk=request.pk)
        assert audit.subject == "" and audit.subject_hash == erasure.subject_hash(tenant_a, SUBJECT)
        assert SUBJECT not in str(audit.receipt) and audit.receipt["subject_hash"] == audit.subject_hash
        assert not Session.objects.for_tenant(tenant_a).filter(subject=SUBJECT).exists()
        assert not Fact.objects.for_tenant(tenant_a).filter(entity=f"acme-{SUBJECT}").exists()
        assert Fact.objects.for_tenant(tenant_a).filter(pk=mixed.pk).exists()
        assert list(
            FactSource.objects.for_tenant(tenant_a).filter(fact=mixed).values_list("episode_id", flat=True)
        ) == [kept["episodes"][0].id]
        assert not FactChange.objects.for_tenant(tenant_a).filter(source_episode_ids__overlap=erased_ids).exists()
        assert not ConsolidationRun.objects.for_tenant(tenant_a).filter(subject=SUBJECT).exists()
        assert all(SUBJECT not in m.subjects for m in ArchiveManifest.objects.for_tenant(tenant_a))
        assert set(EntityAlias.objects.for_tenant(tenant_a).values_list("alias", "subject")) == {
            ("mel", OTHER),
            ("aws", ""),
        }
    assert scratchpad_get(tenant=tenant_a, session_external_id=f"{SUBJECT}-s1") is None
    assert all(SUBJECT not in str(r) for r in lifecycle.iter_archive_rows(tenant=tenant_a))
    # Other subjects and other tenants untouched.
    assert erasure.locate(tenant=tenant_a, subject=OTHER) == other_before
    assert erasure.locate(tenant=tenant_b, subject=SUBJECT) == b_before


def test_erasure_is_idempotent(tenant_a) -> None:
    seed_everywhere(tenant_a, SUBJECT, archived=False)
    request = erasure_request_create(tenant=tenant_a, subject=SUBJECT)
    assert erasure.erasure_execute(tenant=tenant_a, request_id=str(request.pk)).status == ErasureStatus.DONE
    assert erasure.erasure_execute(tenant=tenant_a, request_id=str(request.pk)) is None


def test_subject_export_has_every_layer_including_archives(tenant_a) -> None:
    seed_everywhere(tenant_a, SUBJECT)
    data = erasure.subject_export(tenant=tenant_a, subject=SUBJECT)["locations"]
    assert {r["content"] for r in data["archives"]} == {"I'm living in Porto."}
    assert len(data["episodes"]) == 2 and data["sessions"] and data["facts"] and data["scratchpads"]
    assert data["context_traces"][0]["query"] == "what db?"
    assert [(a["alias"], a["entity"], a["source"]) for a in data["entity_aliases"]] == [("mel", "melanie", "learned")]
    assert all(r["subject"] == SUBJECT for r in data["episodes"])


@pytest.mark.isolation("subject-erasure", "erasure-request-detail")
def test_erasure_api_accepts_and_reports_only_within_the_tenant(
    api_a, api_b, tenant_a, tenant_b, django_capture_on_commit_callbacks
) -> None:
    seed_everywhere(tenant_a, SUBJECT, archived=False)
    seed_everywhere(tenant_b, SUBJECT, archived=False)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_a.post(f"/v1/subjects/{SUBJECT}/erasure", {"reason": "user asked"}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["status"] == "received" and SUBJECT not in str(body)
    detail = api_a.get(f"/v1/erasure-requests/{body['id']}").json()
    assert detail["status"] == "done" and detail["receipt"]["subject_hash"] == body["subject_hash"]
    assert detail["counts"]["episodes"] == 3
    # Another tenant cannot see the request, and its own copy of the subject is untouched.
    other = api_b.get(f"/v1/erasure-requests/{body['id']}")
    assert other.status_code == 404 and other["Content-Type"] == "application/problem+json"
    assert api_b.get("/v1/erasure-requests/not-a-uuid").status_code == 404
    assert erasure.locate(tenant=tenant_b, subject=SUBJECT)["episodes"] == 3


@pytest.mark.isolation("subject-export")
def test_export_api_shows_only_the_callers_tenant(api_a, api_b, tenant_a) -> None:
    seed_everywhere(tenant_a, SUBJECT, archived=False)
    mine = api_a.get(f"/v1/subjects/{SUBJECT}/export").json()
    assert len(mine["locations"]["episodes"]) == 3
    theirs = api_b.get(f"/v1/subjects/{SUBJECT}/export").json()
    assert all(rows == [] for rows in theirs["locations"].values())


def test_erasure_and_export_need_an_admin_key(tenant_a) -> None:
    from rest_framework.test import APIClient

    from tenants.services import api_key_create

    issued = api_key_create(tenant=tenant_a, name="rw", scopes=("read", "write"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    assert client.post(f"/v1/subjects/{SUBJECT}/erasure", {}, format="json").status_code == 403
    assert client.get(f"/v1/subjects/{SUBJECT}/export").status_code == 403


def test_a_sweep_run_that_read_the_subjects_episodes_is_found_and_scrubbed(tenant_a) -> None:
    session = make_session(tenant_a, "sw-1", SUBJECT, ended=True)
    make_episode(tenant_a, session, "My e-mail address is x@example.org.")
    run = services.run_start(tenant=tenant_a, trigger=RunTrigger.SWEEP, reason="backlog older than 1:00:00")
    services.consolidate(tenant=tenant_a, run=run)
    with tenant_scope(tenant_a):
        # As an earlier version stored them: an excerpt of the model's answer in the problems.
        ConsolidationRun.objects.for_tenant(tenant_a).filter(pk=run.pk).update(
            problems=[{"error": "bad answer", "attempt": 1, "excerpt": '{"value": "x@example.org"}'}]
        )
    assert erasure.locate(tenant=tenant_a, subject=SUBJECT)["consolidation_runs"] == 1
    request = erasure_request_create(tenant=tenant_a, subject=SUBJECT)
    assert erasure.erasure_execute(tenant=tenant_a, request_id=str(request.pk)).status == ErasureStatus.DONE
    with tenant_scope(tenant_a):
        after = ConsolidationRun.objects.for_tenant(tenant_a).get(pk=run.pk)
    assert after.problems == [{"error": "bad answer", "attempt": 1}] and after.episodes_read == 1


def _filed_without_subject(tenant, subject: str) -> ErasureRequest:
    """A request as an earlier version left it: still to run, its subject id cleared by another's completion."""
    with tenant_scope(tenant):
        return ErasureRequest.objects.create(
            tenant=tenant,
            subject="",
            subject_hash=erasure.subject_hash(tenant, subject),
            deadline=NOW + timedelta(days=30),
        )


def test_a_request_without_its_subject_never_runs_and_a_done_one_settles_it(tenant_a) -> None:
    seed_everywhere(tenant_a, OTHER, archived=False)
    make_episode(tenant_a, make_session(tenant_a, "x-s1", SUBJECT), "I'm living in Braga.")
    with tenant_scope(tenant_a):
        fact_upsert(
            tenant=tenant_a,
            candidate=FactCandidate(
                subject="",
                entity="the office",
                attribute="wifi",
                value="on",
                statement="The office has wifi.",
                category="other",
                confidence=0.9,
            ),
            actor=Actor(type=ActorType.API_KEY, id="k"),
        )
    done = erasure_request_create(tenant=tenant_a, subject=SUBJECT)
    assert erasure.erasure_execute(tenant=tenant_a, request_id=str(done.pk)).status == ErasureStatus.DONE
    settled = _filed_without_subject(tenant_a, SUBJECT)
    orphan = _filed_without_subject(tenant_a, "never-named")
    with tenant_scope(tenant_a):
        subjectless = Fact.objects.for_tenant(tenant_a).filter(subject="").count()
        runs = list(ConsolidationRun.objects.for_tenant(tenant_a).values_list("reason", flat=True))
    assert subjectless >= 1

    settled = erasure.erasure_execute(tenant=tenant_a, request_id=str(settled.pk))
    orphan = erasure.erasure_execute(tenant=tenant_a, request_id=str(orphan.pk))

    with tenant_scope(tenant_a):
        assert Fact.objects.for_tenant(tenant_a).filter(subject="").count() == subjectless
        assert list(ConsolidationRun.objects.for_tenant(tenant_a).values_list("reason", flat=True)) == runs
        done.refresh_from_db()
    assert settled.status == ErasureStatus.DONE and settled.receipt == done.receipt
    assert orphan.status == ErasureStatus.FAILED and orphan.counts == {} and "not held" in orphan.error
    with pytest.raises(ValueError):
        erasure.plan_for(tenant=tenant_a, subject=" ")
    with pytest.raises(ValueError):
        erasure_request_create(tenant=tenant_a, subject="")

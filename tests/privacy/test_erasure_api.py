"""Erasure through the public API: every location seeded by the paths that really write it, then
erased to zero rows in the database, Redis and the archive files; replays return nothing of it."""

from __future__ import annotations

import gzip
import time
from datetime import timedelta
from typing import Any

import pytest
from django.apps import apps
from django.core.files.storage import storages
from django.db import connection
from django.utils import timezone

from consolidation.models import ConsolidationRun, RunTrigger
from consolidation.tasks import archive_episodes, consolidation_sweep, decay_and_forget
from core.redis import get_redis
from privacy import erasure
from privacy.tasks import process_erasure_requests
from tenants.models import IdempotencyRecord
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db

SUBJECT, OTHER = "yan.private", "ana"
PHONE = "+351 912 345 678"


def _ok(response: Any, *codes: int) -> dict[str, Any]:
    assert response.status_code in (codes or (200, 201)), response.content
    return response.json()


def _erase(api: Any, subject: str, capture: Any) -> dict[str, Any]:
    with capture(execute=True):
        accepted = _ok(api.post(f"/v1/subjects/{subject}/erasure", {"reason": "asked"}, format="json"), 202)
    return _ok(api.get(f"/v1/erasure-requests/{accepted['id']}"))


def _episodes(api: Any, capture: Any, items: list[dict[str, Any]], key: str | None = None) -> list[dict[str, Any]]:
    extra = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    with capture(execute=True):
        return _ok(api.post("/v1/episodes", {"episodes": items}, format="json", **extra), 201)["episodes"]


def _fact(api: Any, capture: Any, key: str | None = None, **fields: Any) -> dict[str, Any]:
    extra = {"HTTP_IDEMPOTENCY_KEY": key} if key else {}
    body = {"statement": f"{fields.get('attribute')} is {fields.get('value')}.", "category": "other", **fields}
    with capture(execute=True):
        return _ok(api.post("/v1/facts", body, format="json", **extra))


def _set(tenant: Any, **tunables: Any) -> None:
    tenant.settings = {**tenant.settings, **tunables}
    tenant.save(update_fields=["settings"])


def test_confirmed_fact_is_erased_and_its_confirm_replay_returns_nothing_of_it(
    api_a, tenant_a, django_capture_on_commit_callbacks
) -> None:
    fact = _fact(
        api_a,
        django_capture_on_commit_callbacks,
        subject=SUBJECT,
        entity=SUBJECT,
        attribute="phone",
        value=PHONE,
        category="contact_info",
    )
    confirm = f"/v1/facts/{fact['fact']['id']}/confirm"
    with django_capture_on_commit_callbacks(execute=True):
        assert api_a.post(confirm, format="json", HTTP_IDEMPOTENCY_KEY="c-1").status_code == 200

    detail = _erase(api_a, SUBJECT, django_capture_on_commit_callbacks)

    assert detail["status"] == "done", detail
    assert api_a.get(f"/v1/facts/{fact['fact']['id']}").status_code == 404
    replay = api_a.post(confirm, format="json", HTTP_IDEMPOTENCY_KEY="c-1")
    assert replay.status_code == 409 and "912" not in replay.content.decode()
    assert "Idempotent-Replayed" not in replay
    assert {k: v for k, v in erasure.locate(tenant=tenant_a, subject=SUBJECT).items() if v} == {}


def seed_through_the_api(api: Any, tenant: Any, capture: Any, subject: str) -> dict[str, Any]:
    """Every location the subject's data reaches, each written by the API path or task that writes it."""
    now = timezone.now()
    s1, s2, s3 = f"{subject}-s1", f"{subject}-s2", f"{subject}-s3"
    episodes = _episodes(
        api,
        capture,
        [
            {"subject": subject, "session": s1, "role": "user", "content": f"My phone number is {PHONE}."},
            {
                "subject": subject,
                "session": s1,
                "role": "user",
                "content": "We use PostgreSQL 16 at Acme.",
                "entities": ["acme"],
            },
            {
                "subject": subject,
                "session": f"{subject}-s0",
                "role": "user",
                "content": "I'm living in Porto.",
                "occurred_at": (now - timedelta(days=400)).isoformat(),
            },
            {"subject": subject, "session": s2, "role": "user", "content": "Draft the plan. Keep it short."},
            # A nickname learned from the subject's own words (entity_aliases).
            {"subject": subject, "session": s1, "role": "user", "content": "My sister Joanna (Jo) visits in May."},
        ],
        key=f"{subject}-e-1",
    )
    # Working memory: a live scratchpad, and an expired one replaced before the sweep came by.
    _ok(api.put(f"/v1/sessions/{s1}/scratchpad", {"call": PHONE}, format="json"))
    ttl = tenant.config.scratchpad_ttl_seconds
    _set(tenant, scratchpad_ttl_seconds=1)
    _ok(api.put(f"/v1/sessions/{s2}/scratchpad", {"old": PHONE}, format="json"))
    time.sleep(1.2)
    _ok(api.put(f"/v1/sessions/{s2}/scratchpad", {"new": subject}, format="json"))
    _set(tenant, scratchpad_ttl_seconds=ttl)

    keys: dict[str, tuple[str, dict[str, Any]]] = {}

    def post(path: str, body: dict[str, Any], key: str, *codes: int) -> dict[str, Any]:
        keys[key] = (path, body)
        with capture(execute=True):
            return _ok(api.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=key), *codes)

    # A fact whose subject comes from its source episode, confirmed.
    derived = _fact(
        api,
        capture,
        key=f"{subject}-f-1",
        entity="phone line",
        attribute="number",
        value=PHONE,
        source_episode_ids=[episodes[0]["id"]],
    )["fact"]
    assert derived["subject"] == subject
    post(f"/v1/facts/{derived['id']}/confirm", {}, f"{subject}-c-1")
    # The subject as the entity of a fact of the tenant's own (no subject's): its entity is exactly the
    # subject id (semantic.selectors.subject_facts_q).
    about = _fact(
        api,
        capture,
        key=f"{subject}-f-2",
        subject="",
        entity=subject,
        attribute="phone",
        value=PHONE,
    )
    # A pending fact approved in review, and a supersession reverted.
    pending = _fact(api, capture, subject=subject, entity=subject, attribute="nickname", value="Y", confidence=0.2)
    assert pending["action"] == "pending", pending
    post(f"/v1/facts/{pending['fact']['id']}/review", {"approve": True}, f"{subject}-r-1")
    _fact(api, capture, subject=subject, entity=subject, attribute="city", value="Porto", cardinality="single")
    moved = _fact(api, capture, subject=subject, entity=subject, attribute="city", value="Lisbon", cardinality="single")
    assert moved["action"] == "superseded", moved
    history = _ok(api.get(f"/v1/facts/{moved['previous']['id']}/history"))["changes"]
    change = next(c for c in history if c["kind"] == "superseded")
    post(f"/v1/fact-changes/{change['id']}/revert", {}, f"{subject}-v-1", 200, 201)
    # A procedure applied in the subject's session.
    procedure = _ok(
        api.post(
            "/v1/procedures",
            {"name": "greet", "trigger": {"keywords": ["hello"]}, "behaviour": "Greet.", "status": "active"},
            format="json",
        ),
        201,
    )
    post(
        f"/v1/procedures/{procedure['id']}/outcomes",
        {"applied": True, "success": True, "session": s1},
        f"{subject}-o-1",
        201,
    )
    # A context served, and feedback on it.
    context = _ok(api.post("/v1/context", {"subject": subject, "session": s1, "query": "my phone?"}, format="json"))
    post(f"/v1/context/{context['trace_id']}/feedback", {"asked_to_repeat": True}, f"{subject}-fb-1")
    # Ending the session summarises its scratchpad and consolidates (the real task, run eagerly).
    ended = post(f"/v1/sessions/{s1}/end", {"outcome": "success"}, f"{subject}-end-1")
    assert ended["subject"] == subject
    # A sweep run names no subject: a late episode, consolidated by the max-delay sweep.
    _episodes(api, capture, [{"subject": subject, "session": s3, "role": "user", "content": "Call me on my mobile."}])
    _ok(api.put(f"/v1/sessions/{s3}/scratchpad", {"call": PHONE}, format="json"))
    _set(tenant, consolidation_max_delay_minutes=0)
    with capture(execute=True):
        assert consolidation_sweep() >= 1
    with tenant_scope(tenant):
        assert ConsolidationRun.objects.for_tenant(tenant).filter(trigger=RunTrigger.SWEEP, subject="").exists()
    with capture(execute=True):
        decay_and_forget()
        archive_episodes()
    exported = _ok(api.get(f"/v1/subjects/{subject}/export"))["locations"]
    assert exported["archives"] and exported["scratchpads"] and exported["facts"]
    return {"keys": keys, "about": about["fact"]["id"], "derived": derived["id"]}


def _redis_holds(*needles: str) -> list[str]:
    redis = get_redis()
    found = []
    for raw in redis.scan_iter(count=1000):
        key = raw.decode()
        kind = redis.type(raw).decode()
        if kind == "string":
            values = [redis.get(raw)]
        elif kind == "hash":
            values = list(redis.hgetall(raw).values())
        elif kind == "list":
            values = redis.lrange(raw, 0, -1)
        elif kind == "zset":
            values = redis.zrange(raw, 0, -1)
        elif kind == "set":
            values = list(redis.smembers(raw))
        else:
            values = []
        texts = [key] + [v.decode(errors="replace") if isinstance(v, bytes) else str(v) for v in values]
        found += [f"{key}: {text}" for text in texts for n in needles if n in text]
    return found


def _archive_files_hold(tenant: Any, *needles: str) -> list[str]:
    storage = storages["archive"]
    found = []

    def walk(path: str) -> None:
        if not storage.exists(path):
            return
        dirs, files = storage.listdir(path)
        for name in files:
            with storage.open(f"{path}/{name}", "rb") as fh:
                text = gzip.decompress(fh.read()).decode()
            found.extend(f"{path}/{name}: {n}" for n in needles if n in text)
        for name in dirs:
            walk(f"{path}/{name}")

    walk(str(tenant.id))
    return found


def test_erasure_of_a_subject_seeded_through_the_api_leaves_nothing_anywhere(
    api_a, api_b, tenant_a, tenant_b, django_capture_on_commit_callbacks
) -> None:
    _set(tenant_a, exploration=0.1)  # it keeps sentence vectors: one location more to erase
    seeded = seed_through_the_api(api_a, tenant_a, django_capture_on_commit_callbacks, SUBJECT)
    seed_through_the_api(api_b, tenant_b, django_capture_on_commit_callbacks, SUBJECT)
    _episodes(
        api_a, django_capture_on_commit_callbacks, [{"subject": OTHER, "session": "ana-s1", "content": "I prefer tea."}]
    )
    before = erasure.locate(tenant=tenant_a, subject=SUBJECT)
    every_location = {loc.name for loc in erasure.LOCATIONS} - {"erasure_requests"}
    assert {k for k, v in before.items() if v} == every_location, before
    assert _archive_files_hold(tenant_a, SUBJECT) and _redis_holds(PHONE)
    other_before = erasure.locate(tenant=tenant_a, subject=OTHER)
    b_before = erasure.locate(tenant=tenant_b, subject=SUBJECT)

    detail = _erase(api_a, SUBJECT, django_capture_on_commit_callbacks)

    assert detail["status"] == "done", detail
    assert {k: v for k, v in erasure.locate(tenant=tenant_a, subject=SUBJECT).items() if v} == {}
    assert detail["counts"]["idempotency_records"] == len(seeded["keys"]) + 3
    with tenant_scope(tenant_a):
        assert not IdempotencyRecord.objects.for_tenant(tenant_a).filter(key__startswith=SUBJECT).exists()
        runs = list(
            ConsolidationRun.objects.for_tenant(tenant_a).values("subject", "session_external_id", "reason", "problems")
        )
    assert runs and all(SUBJECT not in str(run) for run in runs)
    # Shared keys (the expiry index, the orphans list) hold tenant B's copy; tenant A's is gone.
    assert [hit for hit in _redis_holds(SUBJECT, PHONE) if str(tenant_b.id) not in hit] == []
    assert _archive_files_hold(tenant_a, SUBJECT, PHONE) == []
    assert api_a.get(f"/v1/facts/{seeded['about']}").status_code == 404
    facts = _ok(api_a.get("/v1/facts", {"subject": SUBJECT, "status": "any"}))["results"]
    assert facts == []
    exported = _ok(api_a.get(f"/v1/subjects/{SUBJECT}/export"))["locations"]
    assert all(rows == [] for rows in exported.values()), exported
    # A replay after erasure is refused: neither the erased answer nor the request run again.
    for key, (path, body) in seeded["keys"].items():
        with django_capture_on_commit_callbacks(execute=True):
            replay = api_a.post(path, body, format="json", HTTP_IDEMPOTENCY_KEY=key)
        assert replay.status_code == 409 and "Idempotent-Replayed" not in replay, (path, replay.content)
        assert PHONE not in replay.content.decode() and "Lisbon" not in replay.content.decode(), path
    assert {k: v for k, v in erasure.locate(tenant=tenant_a, subject=SUBJECT).items() if v} == {}
    # Another subject and another tenant keep their data.
    assert erasure.locate(tenant=tenant_a, subject=OTHER) == other_before
    assert erasure.locate(tenant=tenant_b, subject=SUBJECT) == b_before


def test_repeated_erasure_requests_for_one_subject_coalesce_and_erase_nothing_else(
    api_a, tenant_a, django_capture_on_commit_callbacks
) -> None:
    capture = django_capture_on_commit_callbacks
    subjectless = _fact(api_a, capture, entity="the office", attribute="wifi", value="on")["fact"]
    assert subjectless["subject"] == ""
    _episodes(api_a, capture, [{"subject": OTHER, "session": "ana-s1", "role": "user", "content": "I prefer tea."}])
    with capture(execute=True):
        _ok(api_a.post("/v1/sessions/ana-s1/end", {}, format="json"))
    with tenant_scope(tenant_a):
        others_run = ConsolidationRun.objects.for_tenant(tenant_a).get(session_external_id="ana-s1")
    mine = _fact(api_a, capture, subject="dup-x", entity="dup-x", attribute="city", value="Porto")["fact"]

    # The worker is busy: five requests arrive before any runs, then the queue drains.
    with capture() as queued:
        answers = [api_a.post("/v1/subjects/dup-x/erasure", {}, format="json") for _ in range(5)]
    for callback in queued:
        callback()
    with capture(execute=True):
        process_erasure_requests()

    assert api_a.get(f"/v1/facts/{subjectless['id']}").status_code == 200
    with tenant_scope(tenant_a):
        others_run.refresh_from_db()
    assert (others_run.subject, others_run.session_external_id) == (OTHER, "ana-s1")
    assert others_run.reason != "(erased)"
    assert api_a.get(f"/v1/facts/{mine['id']}").status_code == 404
    assert [a.status_code for a in answers] == [202] * 5
    assert len({a.json()["id"] for a in answers}) == 1
    detail = _ok(api_a.get(f"/v1/erasure-requests/{answers[0].json()['id']}"))
    assert detail["status"] == "done" and detail["counts"]["facts"] == 1, detail


def test_a_replay_after_erasure_is_refused_and_brings_nothing_back(
    api_a, tenant_a, django_capture_on_commit_callbacks
) -> None:
    capture = django_capture_on_commit_callbacks
    turn = [{"subject": SUBJECT, "session": "r-s1", "role": "user", "content": f"My phone number is {PHONE}."}]
    fact = {
        "subject": SUBJECT,
        "entity": SUBJECT,
        "attribute": "phone",
        "value": PHONE,
        "statement": "Phone.",
        "category": "contact_info",
    }
    theirs = [{"subject": OTHER, "session": "ana-s1", "role": "user", "content": "I prefer tea."}]
    _episodes(api_a, capture, turn, key="turn-1")
    _ok(api_a.post("/v1/facts", fact, format="json", HTTP_IDEMPOTENCY_KEY="fact-1"))
    _episodes(api_a, capture, theirs, key="turn-ana")

    assert _erase(api_a, SUBJECT, capture)["status"] == "done"
    with capture(execute=True):
        replays = [
            api_a.post("/v1/episodes", {"episodes": turn}, format="json", HTTP_IDEMPOTENCY_KEY="turn-1"),
            api_a.post("/v1/facts", fact, format="json", HTTP_IDEMPOTENCY_KEY="fact-1"),
            # Same key, another body: still the erased request's key.
            api_a.post("/v1/facts", {**fact, "value": "0"}, format="json", HTTP_IDEMPOTENCY_KEY="fact-1"),
        ]

    assert {k: v for k, v in erasure.locate(tenant=tenant_a, subject=SUBJECT).items() if v} == {}
    for replay in replays:
        assert replay.status_code == 409, replay.content
        assert replay["Content-Type"] == "application/problem+json" and "erased" in replay.json()["detail"]
        assert PHONE not in replay.content.decode()
    again = api_a.post("/v1/episodes", {"episodes": theirs}, format="json", HTTP_IDEMPOTENCY_KEY="turn-ana")
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true"
    # What stays of an erased key is a hash: neither the key nor anything the request carried.
    with tenant_scope(tenant_a):
        kept = list(apps.get_model("tenants.IdempotencyTombstone").objects.for_tenant(tenant_a).values())
    assert len(kept) == 2 and not any(n in str(kept) for n in ("turn-1", "fact-1", SUBJECT, PHONE))


def _sentence_rows(tenant: Any) -> dict[str, int]:
    """Sentence vectors stored per subject of their passage."""
    with tenant_scope(tenant), connection.cursor() as cursor:
        cursor.execute(
            "SELECT s.subject, count(*) FROM episodic_passagesentence s WHERE s.tenant_id = %s GROUP BY 1",
            [tenant.id],
        )
        return dict(cursor.fetchall())


def test_an_erased_subject_leaves_no_sentence_vectors_and_others_keep_theirs(
    api_a, tenant_a, django_capture_on_commit_callbacks
) -> None:
    said = "I moved to Porto last year. My phone number changed too! Call me on the new one."
    _set(tenant_a, exploration=0.1)  # a tenant that keeps sentence vectors
    _episodes(
        api_a,
        django_capture_on_commit_callbacks,
        [
            {"subject": subject, "session": f"{subject}-s", "kind": "message", "role": "user", "content": said}
            for subject in (SUBJECT, OTHER)
        ],
    )
    assert _sentence_rows(tenant_a) == {SUBJECT: 3, OTHER: 3}

    detail = _erase(api_a, SUBJECT, django_capture_on_commit_callbacks)

    assert detail["status"] == "done", detail
    assert _sentence_rows(tenant_a) == {OTHER: 3}

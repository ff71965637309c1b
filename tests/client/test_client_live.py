"""The sync client against the live service: every resource, errors as problem+json exceptions,
idempotent writes, pagination iterators, and Retry-After honoured on a real 429."""

from __future__ import annotations

import time
import types
import uuid

import pytest
from engram_client import (
    AuthenticationError,
    BadRequestError,
    EngramClient,
    NotFoundError,
    PermissionDeniedError,
    PreconditionFailedError,
    RateLimitError,
    RetryPolicy,
    UnprocessableError,
    context_item_ids,
)
from engram_client import _operations as ops
from pytest_django.live_server_helper import LiveServer

from api import throttling
from tenants.scope import tenant_scope
from tenants.services import api_key_create
from tests.conftest import TenantContext

pytestmark = pytest.mark.live


def _turns(subject: str, session: str, *texts: str) -> list[dict[str, str]]:
    return [
        {"subject": subject, "session": session, "role": "user" if i % 2 == 0 else "assistant", "content": t}
        for i, t in enumerate(texts)
    ]


def test_append_then_list_walks_every_page_in_order(engram: EngramClient) -> None:
    texts = [f"message number {i}" for i in range(7)]
    appended = engram.episodes.append(_turns("u1", "s-pages", *texts))  # type: ignore[arg-type]
    assert appended["count"] == 7
    assert all(e["token_count"] > 0 for e in appended["episodes"])

    first = engram.episodes.list(subject="u1", order="asc", limit=3)
    assert len(first.results) == 3 and first.next_cursor is not None
    walked = list(engram.episodes.iter(subject="u1", order="asc", limit=3))
    assert [e["content"] for e in walked] == texts
    assert [e["id"] for e in walked] == [e["id"] for e in appended["episodes"]]


def test_a_retried_write_with_the_same_key_is_stored_once(engram: EngramClient) -> None:
    key = str(uuid.uuid4())
    call = ops.episodes_append(_turns("u1", "s-idem", "only once"), idempotency_key=key)  # type: ignore[arg-type]
    first = engram.request(call)
    again = engram.request(call)
    assert again == first
    assert len(engram.episodes.list(session="s-idem").results) == 1
    different = ops.episodes_append(_turns("u1", "s-idem", "something else"), idempotency_key=key)  # type: ignore[arg-type]
    with pytest.raises(UnprocessableError):
        engram.request(different)


def test_validation_errors_carry_the_problem_fields(engram: EngramClient) -> None:
    with pytest.raises(BadRequestError) as caught:
        engram.episodes.append([{"subject": "u1", "session": "s1", "kind": "not-a-kind", "content": "x"}])
    err = caught.value
    assert err.status == 400
    assert err.type.endswith("validation-error")
    assert "/episodes/0/kind" in err.pointers
    assert err.detail
    # Bad input changed nothing.
    assert engram.episodes.list(subject="u1").results == []


def test_missing_objects_and_bad_keys_raise_typed_errors(
    live_server: LiveServer, engram: EngramClient, ctx_a: TenantContext
) -> None:
    with pytest.raises(NotFoundError):
        engram.sessions.get("no-such-session")
    with pytest.raises(NotFoundError):
        engram.facts.get(str(uuid.uuid4()))
    with EngramClient(live_server.url, "eng_000000000000_wrong") as stranger, pytest.raises(AuthenticationError):
        stranger.tenant()
    with tenant_scope(ctx_a.tenant):
        read_only = api_key_create(tenant=ctx_a.tenant, name="ro", scopes=["read"])
    with EngramClient(live_server.url, read_only.raw) as reader:
        assert reader.tenant()["scopes"] == ["read"]
        with pytest.raises(PermissionDeniedError):
            reader.episodes.append(_turns("u1", "s1", "hello"))  # type: ignore[arg-type]


def test_sessions_and_scratchpad_with_versions(engram: EngramClient) -> None:
    engram.episodes.append(_turns("u1", "s-pad", "Let's plan the migration."))  # type: ignore[arg-type]
    pad = engram.scratchpads.put("s-pad", {"plan": ["dump", "restore"], "step": 1}, create_only=True)
    assert pad["version"] == 1
    pad = engram.scratchpads.patch("s-pad", {"step": 2, "plan": None}, if_match=1)
    assert pad["document"] == {"step": 2} and pad["version"] == 2
    with pytest.raises(PreconditionFailedError):
        engram.scratchpads.put("s-pad", {"step": 9}, if_match=1)
    assert engram.scratchpads.get("s-pad")["document"] == {"step": 2}
    deleted = engram.scratchpads.delete("s-pad", summarise=True)
    assert deleted["deleted"] is True and deleted["summary_episode_id"] is not None
    with pytest.raises(NotFoundError):
        engram.scratchpads.get("s-pad")

    session = engram.sessions.get("s-pad")
    assert session["subject"] == "u1" and session["episode_count"] >= 1
    ended = engram.sessions.end("s-pad", outcome="success", outcome_signal=1.0)
    assert ended["status"] != "open" and ended["outcome"] == "success"


def test_facts_write_search_confirm_history_retract(engram: EngramClient) -> None:
    created = engram.facts.upsert(
        subject="u1", entity="u1", attribute="database", value="PostgreSQL 15",
        statement="u1 runs PostgreSQL 15.", category="technical_environment", confidence=0.9,
    )  # fmt: skip
    assert created["action"] == "created"
    fact_id = created["fact"]["id"]
    newer = engram.facts.upsert(
        subject="u1", entity="u1", attribute="database", value="PostgreSQL 16",
        statement="u1 migrated to PostgreSQL 16.", category="technical_environment", confidence=0.9,
    )  # fmt: skip
    assert newer["action"] == "superseded" and newer["previous"] is not None
    assert newer["previous"]["id"] == fact_id

    found = engram.facts.search("which postgres version", subject="u1", k=5)
    assert [r["fact"]["value"] for r in found] == ["PostgreSQL 16"]
    assert set(found[0]["score_parts"])

    current = newer["fact"]["id"]
    confirmed = engram.facts.confirm(current)
    assert confirmed["confirmation_count"] >= 1
    history = engram.facts.history(current)
    assert [c["kind"] for c in history["changes"]][-1] == "confirmed"
    retracted = engram.facts.retract(current, reason="customer asked")
    assert retracted["status"] == "retracted"
    assert engram.facts.search("which postgres version", subject="u1") == []
    every = list(engram.facts.iter(status="any", limit=1))
    assert {f["value"] for f in every} == {"PostgreSQL 15", "PostgreSQL 16"}


def test_facts_needing_confirmation_and_entity_aliases(engram: EngramClient, engram_b: EngramClient) -> None:
    pending = engram.facts.upsert(
        subject="u1", entity="u1", attribute="plan", value="Team", statement="u1 is on the Team plan.",
        confidence=0.2,
    )  # fmt: skip
    settled = engram.facts.upsert(subject="u1", entity="u1", attribute="city", value="Lyon", statement="In Lyon.")
    listed = engram.facts.list(needs_confirmation=True, subject="u1").results
    assert [f["id"] for f in listed] == [pending["fact"]["id"]]
    assert settled["fact"]["id"] not in {f["id"] for f in engram.facts.iter(needs_confirmation=True)}

    engram.facts.upsert(subject="u1", entity="Mel", attribute="city", value="Oslo", statement="Mel lives in Oslo.")
    result = engram.aliases.set("Mel", "Melanie")
    assert (result["action"], result["facts_moved"]) == ("created", 1)
    assert (result["alias"]["alias"], result["alias"]["entity"], result["alias"]["source"]) == (
        "mel",
        "melanie",
        "operator",
    )
    assert [a["id"] for a in engram.aliases.iter(entity="Melanie")] == [result["alias"]["id"]]
    assert [f["value"] for f in engram.facts.list(entity="mel").results] == ["Oslo"]
    assert engram_b.aliases.list().results == []
    with pytest.raises(NotFoundError):
        engram_b.aliases.delete(result["alias"]["id"])
    assert engram.aliases.delete(result["alias"]["id"])["alias"] == "mel"
    assert engram.aliases.list().results == []


def test_context_then_feedback(engram: EngramClient) -> None:
    engram.episodes.append(
        _turns("u1", "s-ctx", "Our billing plan is the Team plan.", "Noted, the Team plan.")  # type: ignore[arg-type]
    )
    engram.facts.upsert(
        subject="u1", entity="u1", attribute="plan", value="Team", statement="u1 is on the Team plan.",
        category="business_context",
    )  # fmt: skip
    ctx = engram.context("u1", query="what plan are they on?", session="s-ctx", max_tokens=1000)
    assert ctx["tokens"]["total"] <= 1000
    assert "Team" in ctx["prompt"]
    ids = context_item_ids(ctx)
    assert ids
    feedback = engram.feedback(ctx["trace_id"], used_item_ids=ids[:1], outcome="success", signal=1.0)
    assert feedback["used_count"] == 1 and feedback["offered_count"] == len(ids)
    trace = engram.traces.get(ctx["trace_id"])
    assert trace["subject"] == "u1"
    assert [t["id"] for t in engram.traces.iter(subject="u1")] == [ctx["trace_id"]]
    assert isinstance(engram.stats(), dict)


def test_another_tenants_objects_are_invisible(engram: EngramClient, engram_b: EngramClient) -> None:
    fact = engram.facts.upsert(subject="u1", entity="u1", attribute="city", value="Lyon", statement="u1 lives in Lyon.")
    engram.episodes.append(_turns("u1", "s-private", "secret"))  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        engram_b.facts.get(fact["fact"]["id"])
    with pytest.raises(NotFoundError):
        engram_b.sessions.get("s-private")
    assert engram_b.episodes.list(subject="u1").results == []
    assert engram_b.facts.search("Lyon") == []


def test_a_real_429_is_retried_after_the_wait_the_service_asks_for(
    live_server: LiveServer, ctx_a: TenantContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The limit counts in fixed one-minute windows: the service's clock is held 5 s into a window, so
    # that the requests never straddle two windows (which let the second through, now and then).
    held = (time.time() // 60) * 60 + 5
    monkeypatch.setattr(throttling, "time", types.SimpleNamespace(time=lambda: held))
    tenant = ctx_a.tenant
    tenant.settings = {**tenant.settings, "rate_limit_per_minute": 1}
    tenant.save(update_fields=["settings"])
    waits: list[float] = []
    policy = RetryPolicy(max_retries=2, max_wait=120)
    with EngramClient(live_server.url, ctx_a.raw_key, retry=policy, sleep=waits.append) as client:
        client.tenant()
        with pytest.raises(RateLimitError) as caught:
            client.tenant()
    assert len(waits) == 2
    retry_after = caught.value.retry_after
    assert retry_after is not None and 0 < retry_after <= 61
    # The waits are the service's Retry-After, not the client's own backoff (which would be under 1 s).
    assert all(1 <= w <= 61 for w in waits)


def test_procedures_create_match_outcome_and_deprecate(engram: EngramClient) -> None:
    created = engram.procedures.create(
        name="Back off on 429",
        behaviour="When the user reports 429 errors, tell them to retry with exponential backoff honouring Retry-After.",
        trigger={"keywords": ["429", "rate limit"]},
        steps=["Ask which endpoint", "Explain Retry-After"],
    )
    assert created["status"] == "active"
    assert engram.procedures.get(created["id"])["name"] == "Back off on 429"
    matches = engram.procedures.match(message="We keep getting 429 errors from the API")
    assert [m["procedure"]["id"] for m in matches][:1] == [created["id"]]
    assert matches[0]["why"]
    outcome = engram.procedures.record_outcome(created["id"], applied=True, success=True, signal=1.0, session="s-p")
    assert outcome["procedure_id"] == created["id"] and outcome["applied"] is True
    assert [p["id"] for p in engram.procedures.iter(limit=1)] == [created["id"]]
    deprecated = engram.procedures.deprecate(created["id"], reason="superseded by docs")
    assert deprecated["status"] == "deprecated"
    with pytest.raises(NotFoundError):
        engram.procedures.get(999_999_999)


def test_subject_export_then_erasure(engram: EngramClient) -> None:
    engram.episodes.append(_turns("gone", "s-gone", "My email is gone@example.com."))  # type: ignore[arg-type]
    exported = engram.subjects.export("gone")
    assert exported["subject"] == "gone"
    assert any(rows for rows in exported["locations"].values())
    request = engram.subjects.erase("gone", reason="user asked")
    assert request["id"] and request["status"]
    status = engram.subjects.erasure_status(request["id"])
    assert status["id"] == request["id"]
    assert "gone" not in str(status)  # the audit record holds no personal data

"""Working memory: versions, If-Match, merge patch, size limit, expiry into summary episodes."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.redis import get_redis
from episodic.models import Episode, EpisodeKind
from episodic.scratchpad import (
    INDEX_KEY,
    merge_patch,
    scratchpad_get,
    scratchpad_put,
    scratchpads_erase,
    scratchpads_sweep_expired,
)
from episodic.tasks import sweep_expired_scratchpads
from tenants.scope import tenant_scope
from tests.episodic.conftest import item

pytestmark = pytest.mark.django_db

URL = "/v1/sessions/s-1/scratchpad"


@pytest.fixture
def session(append, tenant_a):
    return append(tenant_a, [item()])[0].session


def _summaries(tenant) -> list[Episode]:
    with tenant_scope(tenant):
        return list(
            Episode.objects.for_tenant(tenant).filter(kind=EpisodeKind.SUMMARY).select_related("session").order_by("id")
        )


def test_put_creates_then_replaces_with_growing_versions(api_a, session) -> None:
    created = api_a.put(URL, {"plan": "refund", "steps": ["look up order"]}, format="json")
    assert created.status_code == 201
    assert created.json()["version"] == 1
    assert created["ETag"] == '"1"'
    replaced = api_a.put(URL, {"plan": "refund", "next": "email"}, format="json")
    assert replaced.status_code == 200
    assert replaced.json()["version"] == 2
    got = api_a.get(URL).json()
    assert got["document"] == {"plan": "refund", "next": "email"}
    assert got["version"] == 2
    assert got["expires_at"] > got["updated_at"]


def test_stale_if_match_is_412_and_changes_nothing(api_a, session) -> None:
    api_a.put(URL, {"a": 1}, format="json")
    api_a.put(URL, {"a": 2}, format="json")
    stale = api_a.put(URL, {"a": 3}, format="json", HTTP_IF_MATCH='"1"')
    assert stale.status_code == 412
    assert stale.json()["current_version"] == 2
    assert api_a.patch(URL, {"b": 1}, format="json", HTTP_IF_MATCH="1").status_code == 412
    assert api_a.delete(URL, HTTP_IF_MATCH='"1"').status_code == 412
    assert api_a.get(URL).json()["document"] == {"a": 2}
    fresh = api_a.put(URL, {"a": 3}, format="json", HTTP_IF_MATCH='"2"')
    assert fresh.status_code == 200
    assert fresh.json()["version"] == 3


def test_if_none_match_creates_only(api_a, session) -> None:
    assert api_a.put(URL, {"a": 1}, format="json", HTTP_IF_NONE_MATCH="*").status_code == 201
    assert api_a.put(URL, {"a": 2}, format="json", HTTP_IF_NONE_MATCH="*").status_code == 412


def test_two_writers_with_the_same_version_one_wins(tenant_a, session) -> None:
    with tenant_scope(tenant_a):
        pad, _ = scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"n": 0})
        scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"n": 1}, if_match=pad.version)
        from core.errors import PreconditionFailed

        with pytest.raises(PreconditionFailed):
            scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"n": 2}, if_match=pad.version)
    assert scratchpad_get(tenant=tenant_a, session_external_id="s-1").document == {"n": 1}


def test_patch_is_a_json_merge_patch(api_a, session) -> None:
    api_a.put(URL, {"plan": {"goal": "refund", "steps": [1, 2]}, "notes": "x", "keep": True}, format="json")
    response = api_a.patch(
        URL,
        data='{"plan": {"steps": [3], "owner": "bot"}, "notes": null}',
        content_type="application/merge-patch+json",
    )
    assert response.status_code == 200, response.json()
    assert response.json()["document"] == {"plan": {"goal": "refund", "steps": [3], "owner": "bot"}, "keep": True}
    assert response.json()["version"] == 2


def test_patch_of_a_missing_scratchpad_is_404(api_a, session) -> None:
    assert api_a.patch(URL, {"a": 1}, format="json").status_code == 404


def test_oversized_scratchpad_is_413(api_a, session, settings) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "MAX_SCRATCHPAD_BYTES": 100}
    response = api_a.put(URL, {"notes": "x" * 200}, format="json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/problem+json"
    api_a.put(URL, {"notes": "small"}, format="json")
    assert api_a.patch(URL, {"more": "y" * 200}, format="json").status_code == 413
    assert api_a.get(URL).json()["document"] == {"notes": "small"}


@pytest.mark.parametrize("method", ["put", "patch"])
@pytest.mark.parametrize("content_type", ["application/json", "application/merge-patch+json"])
def test_an_empty_body_is_a_400_and_changes_nothing(api_a, session, method: str, content_type: str) -> None:
    """An empty body (Content-Length: 0; a chunked body is read whole into one first) says nothing, and
    must not replace the document with {}: clearing is an explicit {} or a DELETE (issue 40)."""
    api_a.put(URL, {"plan": "keep me"}, format="json")

    answer = getattr(api_a, method)(URL, data=b"", content_type=content_type)

    assert answer.status_code == 400, answer.content
    assert answer["Content-Type"] == "application/problem+json"
    assert answer.json()["errors"][0]["pointer"] == "/"
    pad = api_a.get(URL).json()
    assert (pad["document"], pad["version"]) == ({"plan": "keep me"}, 1)


def test_an_empty_body_of_a_new_scratchpad_creates_nothing(api_a, session) -> None:
    assert api_a.put(URL, data=b"", content_type="application/json").status_code == 400
    assert api_a.get(URL).status_code == 404


def test_an_explicit_empty_object_clears_the_scratchpad(api_a, session) -> None:
    api_a.put(URL, {"plan": "old"}, format="json")
    cleared = api_a.put(URL, {}, format="json")
    assert (cleared.status_code, cleared.json()["document"], cleared.json()["version"]) == (200, {}, 2)


def test_scratchpad_must_be_an_object_of_an_existing_session(api_a, session) -> None:
    assert api_a.put(URL, [1, 2], format="json").status_code == 400
    assert api_a.put("/v1/sessions/unknown/scratchpad", {"a": 1}, format="json").status_code == 404
    assert api_a.put(URL, {"a": 1}, format="json", HTTP_IF_MATCH="abc").status_code == 400
    assert api_a.put(URL, {"a": "nul\x00"}, format="json").status_code == 400


def test_delete_with_summarise_keeps_the_content_as_a_summary_episode(
    api_a, tenant_a, session, django_capture_on_commit_callbacks
) -> None:
    api_a.put(URL, {"plan": "refund", "result": {"order": "#123"}}, format="json")
    with django_capture_on_commit_callbacks(execute=True):
        response = api_a.delete(URL + "?summarise=true")
    assert response.status_code == 200
    [summary] = _summaries(tenant_a)
    assert response.json()["summary_episode_id"] == summary.pk
    assert summary.payload["scratchpad"] == {"plan": "refund", "result": {"order": "#123"}}
    assert summary.payload["reason"] == "deleted"
    assert summary.role == "working_memory"
    assert summary.session.external_id == "s-1"
    assert api_a.get(URL).status_code == 404


def test_plain_delete_leaves_no_episode(api_a, tenant_a, session) -> None:
    api_a.put(URL, {"plan": "x"}, format="json")
    assert api_a.delete(URL).json()["summary_episode_id"] is None
    assert api_a.get(URL).status_code == 404
    assert _summaries(tenant_a) == []
    assert api_a.delete(URL).status_code == 404


def test_expiry_becomes_a_summary_episode_through_the_sweep(tenant_a, session) -> None:
    tenant_a.settings = {"scratchpad_ttl_seconds": 1}
    tenant_a.save(update_fields=["settings"])
    with tenant_scope(tenant_a):
        scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"plan": "a"})
        scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"plan": "b"})
    assert scratchpads_sweep_expired() == {"summarised": 0, "dropped": 0, "kept": 0}  # not yet due
    _wait_until_expired(tenant_a)
    assert sweep_expired_scratchpads.delay().get()["summarised"] == 1
    [summary] = _summaries(tenant_a)
    assert summary.payload["scratchpad"] == {"plan": "b"}
    assert summary.payload["version"] == 2
    assert summary.payload["reason"] == "expired"
    # Nothing left to do: a second sweep adds nothing.
    assert scratchpads_sweep_expired()["summarised"] == 0
    assert len(_summaries(tenant_a)) == 1
    assert get_redis().zcard(INDEX_KEY) == 0


def test_expired_pad_rewritten_before_the_sweep_is_not_lost(tenant_a, session) -> None:
    tenant_a.settings = {"scratchpad_ttl_seconds": 1}
    tenant_a.save(update_fields=["settings"])
    with tenant_scope(tenant_a):
        scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"plan": "old"})
    _wait_until_expired(tenant_a)
    tenant_a.settings = {"scratchpad_ttl_seconds": 3600}
    tenant_a.save(update_fields=["settings"])
    with tenant_scope(tenant_a):
        fresh, created = scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"plan": "new"})
    assert created and fresh.version == 1
    assert scratchpads_sweep_expired()["summarised"] == 1
    assert [s.payload["scratchpad"] for s in _summaries(tenant_a)] == [{"plan": "old"}]
    assert scratchpad_get(tenant=tenant_a, session_external_id="s-1").document == {"plan": "new"}


def test_sweep_crash_after_the_episode_does_not_double_it(tenant_a, session, monkeypatch) -> None:
    tenant_a.settings = {"scratchpad_ttl_seconds": 1}
    tenant_a.save(update_fields=["settings"])
    with tenant_scope(tenant_a):
        scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"plan": "a"})
    _wait_until_expired(tenant_a)
    redis = get_redis()
    real_eval = redis.eval
    monkeypatch.setattr(redis, "eval", lambda *a, **k: (_ for _ in ()).throw(ConnectionError("lost")))
    with pytest.raises(ConnectionError):
        scratchpads_sweep_expired()
    monkeypatch.setattr(redis, "eval", real_eval)
    assert scratchpads_sweep_expired()["summarised"] == 1  # the retry finds the summary already stored
    assert len(_summaries(tenant_a)) == 1


def test_erasure_drops_scratchpads_without_a_summary(tenant_a, session) -> None:
    with tenant_scope(tenant_a):
        scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"plan": "a"})
    assert scratchpads_erase(tenant=tenant_a, session_external_ids=["s-1", "s-9"]) == 1
    assert scratchpad_get(tenant=tenant_a, session_external_id="s-1") is None
    assert scratchpads_sweep_expired(now=time.time() + 10**6)["summarised"] == 0
    assert _summaries(tenant_a) == []


@pytest.mark.isolation("session-scratchpad")
def test_another_tenant_cannot_see_or_touch_a_scratchpad(api_a, api_b, append, tenant_b, session) -> None:
    api_a.put(URL, {"secret": "A"}, format="json")
    assert api_b.get(URL).status_code == 404
    assert api_b.put(URL, {"x": 1}, format="json").status_code == 404
    assert api_b.patch(URL, {"x": 1}, format="json").status_code == 404
    assert api_b.delete(URL).status_code == 404
    # Even with a session of the same name, B gets its own scratchpad.
    append(tenant_b, [item(subject="bob")])
    assert api_b.get(URL).status_code == 404
    assert api_b.put(URL, {"mine": "B"}, format="json").json()["version"] == 1
    assert api_a.get(URL).json()["document"] == {"secret": "A"}


def _wait_until_expired(tenant) -> None:
    deadline = time.time() + 5
    while scratchpad_get(tenant=tenant, session_external_id="s-1") is not None:
        assert time.time() < deadline
        time.sleep(0.05)
    while get_redis().zrangebyscore(INDEX_KEY, "-inf", time.time()) == []:
        assert time.time() < deadline
        time.sleep(0.05)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=10,
)
json_objects = st.dictionaries(st.text(max_size=3), json_values, max_size=4)


@given(target=json_objects, patch=json_objects)
@settings(max_examples=200)
def test_merge_patch_is_idempotent_and_sets_every_non_null_member(target, patch) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once
    for key, value in patch.items():
        if value is None:
            assert key not in once
        elif not isinstance(value, dict):
            assert once[key] == value
    for key in set(target) - set(patch):
        assert once[key] == target[key]


def test_a_shadow_copy_expires_a_grace_period_after_its_scratchpad(api_a, tenant_a, session, settings) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "SCRATCHPAD_SHADOW_GRACE_SECONDS": 600}
    tenant_a.settings = {**tenant_a.settings, "scratchpad_ttl_seconds": 120}
    tenant_a.save(update_fields=["settings"])
    assert api_a.put(URL, {"plan": "a"}, format="json").status_code == 201
    redis = get_redis()
    member = f"{tenant_a.id}:s-1"
    live, shadow = redis.pttl(f"engram:scratch:{member}"), redis.pttl(f"engram:scratch-shadow:{member}")
    assert 0 < live <= 120_000
    assert 120_000 < shadow <= 720_000 and shadow - live >= 590_000
    # Every write renews both.
    assert api_a.patch(URL, {"more": 1}, format="json").status_code == 200
    assert 700_000 < redis.pttl(f"engram:scratch-shadow:{member}") <= 720_000

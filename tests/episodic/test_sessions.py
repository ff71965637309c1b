"""GET /v1/sessions/{session} and POST /v1/sessions/{session}/end."""

from __future__ import annotations

from datetime import datetime, timedelta
from unittest import mock

import pytest

from episodic.models import Episode, EpisodeKind, Session, SessionStatus
from episodic.scratchpad import scratchpad_get, scratchpad_put
from tenants.scope import tenant_scope
from tests.episodic.conftest import T0, item, timeline

pytestmark = pytest.mark.django_db


def test_session_detail_has_counts_and_summary(api_a, append, tenant_a) -> None:
    append(tenant_a, [*timeline(3), item("ran", kind="tool_call")])
    body = api_a.get("/v1/sessions/s-1").json()
    assert body["session"] == "s-1"
    assert body["subject"] == "alice"
    assert body["status"] == "open"
    assert body["summary"] == ""
    assert body["counts"]["episodes"] == 4
    assert body["counts"]["by_kind"] == {"message": 3, "tool_call": 1}
    assert body["counts"]["pending_embeddings"] == 4


def test_unknown_session_is_404(api_a) -> None:
    response = api_a.get("/v1/sessions/nope")
    assert response.status_code == 404
    assert response["Content-Type"] == "application/problem+json"


@pytest.mark.isolation("session-detail")
def test_another_tenants_session_is_404(api_b, append, tenant_a) -> None:
    append(tenant_a, [item()])
    assert api_b.get("/v1/sessions/s-1").status_code == 404


def test_end_marks_the_session_and_enqueues_consolidation_after_commit(
    api_a, append, tenant_a, django_capture_on_commit_callbacks
) -> None:
    [episode] = append(tenant_a, [item()])
    with mock.patch("consolidation.tasks.consolidate_session.delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            response = api_a.post("/v1/sessions/s-1/end", {"outcome": "success", "outcome_signal": 0.8}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["status"] == "ended"
    assert body["outcome"] == "success"
    assert body["outcome_signal"] == 0.8
    assert body["ended_at"] is not None
    delay.assert_called_once_with(str(tenant_a.id), episode.session_id)


def test_end_is_not_enqueued_when_the_request_fails(api_a, django_capture_on_commit_callbacks) -> None:
    with mock.patch("consolidation.tasks.consolidate_session.delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            assert api_a.post("/v1/sessions/nope/end", {}, format="json").status_code == 404
    delay.assert_not_called()


def test_ending_twice_is_a_harmless_retry_but_another_outcome_conflicts(
    api_a, append, tenant_a, django_capture_on_commit_callbacks
) -> None:
    append(tenant_a, [item()])
    with mock.patch("consolidation.tasks.consolidate_session.delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            assert api_a.post("/v1/sessions/s-1/end", {"outcome": "failure"}, format="json").status_code == 200
            assert api_a.post("/v1/sessions/s-1/end", {"outcome": "failure"}, format="json").status_code == 200
            assert api_a.post("/v1/sessions/s-1/end", {"outcome": "success"}, format="json").status_code == 409
    assert delay.call_count == 1


def test_bad_outcome_is_a_problem(api_a, append, tenant_a) -> None:
    append(tenant_a, [item()])
    response = api_a.post("/v1/sessions/s-1/end", {"outcome": "great"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/outcome"
    with tenant_scope(tenant_a):
        assert Session.objects.for_tenant(tenant_a).get().status == SessionStatus.OPEN


def test_end_turns_the_scratchpad_into_a_summary_episode(
    api_a, append, tenant_a, django_capture_on_commit_callbacks
) -> None:
    append(tenant_a, [item()])
    with tenant_scope(tenant_a):
        scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"plan": "refund", "step": 3})
    with mock.patch("consolidation.tasks.consolidate_session.delay"):
        with django_capture_on_commit_callbacks(execute=True):
            response = api_a.post("/v1/sessions/s-1/end", {}, format="json")
    assert response.status_code == 200
    assert response.json()["episode_count"] == 2
    with tenant_scope(tenant_a):
        summary = Episode.objects.for_tenant(tenant_a).get(kind=EpisodeKind.SUMMARY)
        assert summary.payload["scratchpad"] == {"plan": "refund", "step": 3}
        assert summary.payload["reason"] == "session_end"
        assert "- plan: refund" in summary.content
        assert Session.objects.for_tenant(tenant_a).get().episode_count == 2
    assert scratchpad_get(tenant=tenant_a, session_external_id="s-1") is None


def test_end_with_idempotency_key_replays(api_a, append, tenant_a, django_capture_on_commit_callbacks) -> None:
    append(tenant_a, [item()])
    with mock.patch("consolidation.tasks.consolidate_session.delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            first = api_a.post("/v1/sessions/s-1/end", {}, format="json", HTTP_IDEMPOTENCY_KEY="end-1")
            again = api_a.post("/v1/sessions/s-1/end", {}, format="json", HTTP_IDEMPOTENCY_KEY="end-1")
    assert again["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert delay.call_count == 1


@pytest.mark.isolation("session-end")
def test_another_tenant_cannot_end_a_session(api_b, append, tenant_a) -> None:
    append(tenant_a, [item()])
    assert api_b.post("/v1/sessions/s-1/end", {"outcome": "failure"}, format="json").status_code == 404
    with tenant_scope(tenant_a):
        assert Session.objects.for_tenant(tenant_a).get().status == SessionStatus.OPEN


def test_a_nul_in_a_session_id_is_a_400_naming_the_parameter(api_a) -> None:
    for method, path in [
        ("GET", "/v1/sessions/a%00b"),
        ("POST", "/v1/sessions/a%00b/end"),
        ("GET", "/v1/sessions/a%00b/scratchpad"),
        ("PUT", "/v1/sessions/a%00b/scratchpad"),
    ]:
        response = api_a.generic(method, path, "{}", content_type="application/json")
        assert response.status_code == 400, (method, path, response.content[:200])
        assert response["Content-Type"] == "application/problem+json"
        assert [e["pointer"] for e in response.json()["errors"]] == ["/session"]


@pytest.mark.parametrize("session", ["x" * 300])
def test_impossible_session_ids_are_404_not_500(api_a, session) -> None:
    assert api_a.get(f"/v1/sessions/{session}").status_code == 404
    assert api_a.post(f"/v1/sessions/{session}/end", {}, format="json").status_code == 404
    assert api_a.get(f"/v1/sessions/{session}/scratchpad").status_code == 404
    assert api_a.put(f"/v1/sessions/{session}/scratchpad", {"a": 1}, format="json").status_code == 404


def test_appending_to_an_ended_session_is_a_409_that_stores_nothing_and_names_the_fix(api_a, append, tenant_a) -> None:
    append(tenant_a, [item("before the end")])
    assert api_a.post("/v1/sessions/s-1/end", {"outcome": "success"}, format="json").status_code == 200
    late = {"episodes": [item("fine, thanks", session="s-2"), item("one more thing")]}
    response = api_a.post("/v1/episodes", late, format="json")
    assert response.status_code == 409, response.content[:300]
    body = response.json()
    assert [e["pointer"] for e in body["errors"]] == ["/episodes/1/session"]
    assert "ended" in body["detail"] and "new session id" in body["detail"]
    with tenant_scope(tenant_a):
        assert Episode.objects.count() == 1  # all or nothing: s-2's episode is not stored either
        session = Session.objects.get(external_id="s-1")
        assert (session.status, session.episode_count) == (SessionStatus.ENDED, 1)
    assert (
        api_a.post("/v1/episodes", {"episodes": [item("one more thing", session="s-1b")]}, format="json").status_code
        == 201
    )


def test_consolidation_still_writes_its_summary_into_an_ended_session(append, tenant_a) -> None:
    append(tenant_a, [item("before the end")])
    with tenant_scope(tenant_a):
        Session.objects.filter(external_id="s-1").update(status=SessionStatus.ENDED)
    [summary] = append(tenant_a, [item("The session in short.", kind=EpisodeKind.SUMMARY)])
    assert summary.session.external_id == "s-1"


def test_a_session_that_ends_after_the_batch_read_it_still_refuses_the_batch(api_a, append, tenant_a) -> None:
    # As if the end committed between the batch's read of its sessions and its counter update: the
    # conditional UPDATE, which waits for the end's row lock, is what refuses it then.
    append(tenant_a, [item("before the end")])
    assert api_a.post("/v1/sessions/s-1/end", {}, format="json").status_code == 200
    with mock.patch("episodic.services._ended_session_errors", return_value=[]):
        response = api_a.post("/v1/episodes", {"episodes": [item("late")]}, format="json")
    assert response.status_code == 409
    with tenant_scope(tenant_a):
        assert Episode.objects.count() == 1
        assert Session.objects.get(external_id="s-1").episode_count == 1


def test_a_replayed_session_ends_at_the_time_it_ended(
    api_a, append, tenant_a, django_capture_on_commit_callbacks
) -> None:
    """An import or the demo replays old conversations: `ended_at` says when one ended, and the summary
    of its scratchpad is dated then, not at the moment of the replay."""
    append(tenant_a, timeline(3))  # T0, T0 + 1 min, T0 + 2 min
    with tenant_scope(tenant_a):
        scratchpad_put(tenant=tenant_a, session_external_id="s-1", document={"plan": "refund"})
    ended = (T0 + timedelta(minutes=5)).isoformat()
    with mock.patch("consolidation.tasks.consolidate_session.delay"):
        with django_capture_on_commit_callbacks(execute=True):
            response = api_a.post("/v1/sessions/s-1/end", {"outcome": "success", "ended_at": ended}, format="json")
    assert response.status_code == 200, response.json()
    assert datetime.fromisoformat(response.json()["ended_at"]) == T0 + timedelta(minutes=5)
    with tenant_scope(tenant_a):
        summary = Episode.objects.for_tenant(tenant_a).get(kind=EpisodeKind.SUMMARY)
    assert summary.occurred_at == T0 + timedelta(minutes=5)


@pytest.mark.parametrize(
    ("ended_at", "says"),
    [
        ((T0 + timedelta(seconds=30)).isoformat(), "before the session's last event"),
        ("2999-01-01T00:00:00Z", "in the future"),
        ("yesterday", "wrong format"),
    ],
)
def test_an_end_time_before_the_last_event_or_in_the_future_is_refused(
    api_a, append, tenant_a, ended_at: str, says: str
) -> None:
    append(tenant_a, timeline(3))
    response = api_a.post("/v1/sessions/s-1/end", {"outcome": "success", "ended_at": ended_at}, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["errors"][0]["pointer"] == "/ended_at" and says in response.json()["errors"][0]["detail"]
    with tenant_scope(tenant_a):
        assert Session.objects.for_tenant(tenant_a).get().status == SessionStatus.OPEN

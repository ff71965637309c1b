"""The summary the consolidator writes becomes the session's summary: API, dashboard and context read it."""

from __future__ import annotations

import pytest

from consolidation import services
from episodic.models import Episode, Session
from tenants.scope import tenant_scope
from tests.consolidation.conftest import make_episode, make_session

pytestmark = pytest.mark.django_db


def _converse(api, session: str, turns: list[str], callbacks_fixture) -> None:
    episodes = [
        {"subject": "u1", "session": session, "kind": "message", "role": "user", "content": text} for text in turns
    ]
    assert api.post("/v1/episodes", {"episodes": episodes}, format="json").status_code == 201
    with callbacks_fixture(execute=True):
        assert api.post(f"/v1/sessions/{session}/end", {"outcome": "success"}, format="json").status_code == 200


def test_the_consolidators_summary_is_the_sessions_summary_and_is_not_served_beside_its_turns(
    api_a, api_b, django_capture_on_commit_callbacks
) -> None:
    _converse(
        api_a,
        "trip-1",
        ["We are planning a kayak trip to the Dolomites lakes in July.", "The kayak rental shop needs a deposit."],
        django_capture_on_commit_callbacks,
    )
    session = api_a.get("/v1/sessions/trip-1").json()
    assert "kayak" in session["summary"]
    [episode] = api_a.get("/v1/episodes", {"session": "trip-1", "kind": "summary"}).json()["results"]
    assert session["summary"] == episode["content"]
    context = api_a.post(
        "/v1/context",
        {"subject": "u1", "session": "later", "query": "kayak trip deposit", "max_tokens": 1000},
        format="json",
    ).json()
    # The offline summary repeats the turns verbatim: the turns are served, the summary is not.
    items = context["layers"]["episodic"]
    assert {i["text"] for i in items if i["type"] == "episode"} == {
        "user: We are planning a kayak trip to the Dolomites lakes in July.",
        "user: The kayak rental shop needs a deposit.",
    }
    assert not any(i["type"] == "session_summary" for i in items)
    assert api_b.get("/v1/sessions/trip-1").status_code == 404


def test_a_summary_episode_stored_before_sessions_carried_it_is_copied_on_the_next_pass(tenant_a) -> None:
    session = make_session(tenant_a, "old", ended=True)
    make_episode(tenant_a, session, "We use Terraform for the state file.")
    with tenant_scope(tenant_a):
        Episode.objects.create(
            tenant=tenant_a,
            session=session,
            subject=session.subject,
            kind="summary",
            role="system",
            content="user: We use Terraform.",
            external_id=services.SUMMARY_EXTERNAL_ID,
            content_hash="x",
        )
    assert services.session_summarise(tenant=tenant_a, session_id=session.id) is None
    with tenant_scope(tenant_a):
        assert Session.objects.for_tenant(tenant_a).get(pk=session.pk).summary == "user: We use Terraform."

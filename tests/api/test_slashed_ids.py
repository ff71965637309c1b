"""Subjects, sessions and entities are the tenant's own strings, `/` included: whatever can be written
can be read, exported and erased through every route that names it (percent-encoded, as clients do)."""

from __future__ import annotations

from urllib.parse import quote

import pytest

pytestmark = pytest.mark.django_db

SUBJECT = "org/alice"
SESSION = "team/1/x"
ENTITY = "org/alice"


def _enc(value: str) -> str:
    return quote(value, safe="")


@pytest.fixture
def written(api_a) -> None:
    response = api_a.post(
        "/v1/episodes",
        {"episodes": [{"subject": SUBJECT, "session": SESSION, "content": "Alice likes tea.", "entities": [ENTITY]}]},
        format="json",
    )
    assert response.status_code == 201, response.content
    fact = api_a.post(
        "/v1/facts",
        {"subject": SUBJECT, "entity": ENTITY, "attribute": "drink", "value": "tea", "statement": "Alice drinks tea."},
        format="json",
    )
    assert fact.status_code in (200, 201), fact.content


def test_a_subject_with_a_slash_can_be_exported(api_a, written) -> None:
    response = api_a.get(f"/v1/subjects/{_enc(SUBJECT)}/export")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["subject"] == SUBJECT
    assert any(rows for rows in body["locations"].values())


def test_a_subject_with_a_slash_can_be_erased(api_a, written) -> None:
    response = api_a.post(f"/v1/subjects/{_enc(SUBJECT)}/erasure", {"reason": "asked"}, format="json")
    assert response.status_code == 202, response.content


def test_a_session_with_slashes_can_be_read_ended_and_given_a_scratchpad(api_a, written) -> None:
    session = _enc(SESSION)
    detail = api_a.get(f"/v1/sessions/{session}")
    assert detail.status_code == 200, detail.content
    assert detail.json()["session"] == SESSION
    put = api_a.put(f"/v1/sessions/{session}/scratchpad", {"plan": "tea"}, format="json")
    assert put.status_code == 201, put.content
    assert put.json()["session"] == SESSION
    assert api_a.get(f"/v1/sessions/{session}/scratchpad").json()["document"] == {"plan": "tea"}
    assert api_a.delete(f"/v1/sessions/{session}/scratchpad").status_code == 200
    ended = api_a.post(f"/v1/sessions/{session}/end", {}, format="json")
    assert ended.status_code == 200, ended.content
    assert ended.json()["session"] == SESSION


def test_an_entity_with_a_slash_has_a_graph(api_a, written) -> None:
    response = api_a.get(f"/v1/entities/{_enc(ENTITY)}/graph")
    assert response.status_code == 200, response.content
    assert response.json()["facts"], response.json()


@pytest.mark.isolation("subject-export")
def test_another_tenants_slashed_subject_is_invisible(api_a, api_b, written) -> None:
    response = api_b.get(f"/v1/subjects/{_enc(SUBJECT)}/export")
    assert response.status_code == 200
    assert not any(rows for rows in response.json()["locations"].values())


@pytest.mark.parametrize("session", ["a/end", "a/scratchpad", "org/b/end"])
def test_a_session_id_that_a_url_could_not_tell_from_a_route_is_refused_when_written(api_a, session: str) -> None:
    response = api_a.post(
        "/v1/episodes", {"episodes": [{"subject": "s", "session": session, "content": "hi"}]}, format="json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["pointer"] == "/episodes/0/session"


def test_a_session_id_with_a_newline_is_addressable(api_a) -> None:
    session = "line\none"
    response = api_a.post(
        "/v1/episodes", {"episodes": [{"subject": "s", "session": session, "content": "hi"}]}, format="json"
    )
    assert response.status_code == 201, response.content
    assert api_a.get(f"/v1/sessions/{_enc(session)}").json()["session"] == session


@pytest.mark.parametrize("session", [" s1", "s1 ", "\ts1"])
def test_a_session_id_is_kept_as_written_so_its_route_finds_it(api_a, session) -> None:
    """A session id with surrounding whitespace names its own session (as a subject id does), so the
    session's routes, which take the id exactly as the URL spells it, find what the append wrote."""
    response = api_a.post(
        "/v1/episodes", {"episodes": [{"subject": SUBJECT, "session": session, "content": "hi"}]}, format="json"
    )
    assert response.status_code == 201, response.content
    detail = api_a.get(f"/v1/sessions/{_enc(session)}")
    assert detail.status_code == 200, detail.content
    assert detail.json()["session"] == session
    assert api_a.post(f"/v1/sessions/{_enc(session)}/end", {}, format="json").status_code == 200
    other = api_a.post(
        "/v1/episodes", {"episodes": [{"subject": SUBJECT, "session": "s1", "content": "hi"}]}, format="json"
    )
    assert other.status_code == 201, other.content
    assert api_a.get("/v1/sessions/s1").json()["session"] == "s1"


@pytest.mark.parametrize("field", ["session", "agent", "external_id"])
def test_an_id_of_whitespace_only_is_refused(api_a, field) -> None:
    item = {"subject": SUBJECT, "content": "hi", field: "   "}
    response = api_a.post("/v1/episodes", {"episodes": [item]}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["pointer"] == f"/episodes/0/{field}"

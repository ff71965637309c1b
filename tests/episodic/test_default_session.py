"""One rule for the session at every entry point: an episode without `session` joins its subject's
session of that UTC day, `auto:<YYYY-MM-DD>:<subject>`; an explicit id names one subject's
conversation across the tenant."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

pytestmark = pytest.mark.django_db


def _post(api: Any, *items: dict[str, Any]) -> Any:
    return api.post("/v1/episodes", {"episodes": list(items)}, format="json")


def test_an_episode_without_a_session_joins_its_subjects_session_of_the_day(api_a: Any) -> None:
    today = timezone.now().astimezone(UTC).date().isoformat()
    response = _post(api_a, {"subject": "alice", "content": "I moved to Lisbon."})
    assert response.status_code == 201, response.json()
    assert response.json()["episodes"][0]["session"] == f"auto:{today}:alice"

    again = _post(api_a, {"subject": "alice", "content": "And I drink my coffee black."})
    assert again.json()["episodes"][0]["session"] == f"auto:{today}:alice"
    other = _post(api_a, {"subject": "bob", "content": "I am Bob."})
    assert other.status_code == 201
    assert other.json()["episodes"][0]["session"] == f"auto:{today}:bob"

    session = api_a.get(f"/v1/sessions/auto:{today}:alice").json()
    assert (session["subject"], session["counts"]["episodes"]) == ("alice", 2)


def test_the_day_is_the_episodes_own_utc_day(api_a: Any) -> None:
    then = datetime(2025, 3, 9, 23, 30, tzinfo=UTC) + timedelta(hours=2)  # 10 March, 01:30 UTC
    response = _post(api_a, {"subject": "alice", "content": "late", "occurred_at": "2025-03-09T20:30:00-05:00"})
    assert response.json()["episodes"][0]["session"] == f"auto:{then.date().isoformat()}:alice"


def test_a_subject_that_cannot_be_in_a_session_id_gets_its_digest(api_a: Any) -> None:
    today = timezone.now().astimezone(UTC).date().isoformat()
    for subject in ("x" * 255, "team/end"):
        response = _post(api_a, {"subject": subject, "content": "hello"})
        assert response.status_code == 201, response.json()
        digest = hashlib.sha256(subject.encode()).hexdigest()[:32]
        session = response.json()["episodes"][0]["session"]
        assert session == f"auto:{today}:sha256:{digest}"
        assert api_a.get(f"/v1/sessions/{session}").json()["subject"] == subject


def test_an_explicit_session_of_another_subject_says_what_to_do(api_a: Any) -> None:
    assert _post(api_a, {"subject": "alice", "session": "s1", "content": "hi"}).status_code == 201
    response = _post(api_a, {"subject": "bob", "session": "s1", "content": "hi"})
    assert response.status_code == 400
    detail = response.json()["errors"][0]["detail"]
    assert "belongs to another subject" in detail and "omit `session`" in detail


def test_an_empty_session_is_still_a_problem(api_a: Any) -> None:
    response = _post(api_a, {"subject": "alice", "session": " ", "content": "hi"})
    assert response.status_code == 400
    assert response.json()["errors"][0]["pointer"] == "/episodes/0/session"

"""Through the API: a conversation is written, the session ends, facts appear once the task has run."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db


def test_facts_appear_after_the_session_ends(api_a, django_capture_on_commit_callbacks) -> None:
    turns = [
        ("user", "Hi, my name is Ana Ribeiro. We use PostgreSQL 15 and Airflow."),
        ("assistant", "Hello Ana, how can I help?"),
        ("user", "The nightly export keeps failing. My e-mail address is ana@lumen.example."),
    ]
    episodes = [
        {"subject": "u-ana", "session": "chat-1", "kind": "message", "role": role, "content": text}
        for role, text in turns
    ]
    assert api_a.post("/v1/episodes", {"episodes": episodes}, format="json").status_code == 201
    assert api_a.get("/v1/facts").json()["results"] == []
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api_a.post("/v1/sessions/chat-1/end", {"outcome": "success"}, format="json")
    assert response.status_code == 200
    # The request only enqueued the consolidation; nothing was extracted on its path.
    assert len(callbacks) >= 1 and api_a.get("/v1/facts").json()["results"] == []
    for callback in callbacks:
        callback()  # what the worker does once the task arrives
    facts = {(f["attribute"], f["value"]) for f in api_a.get("/v1/facts").json()["results"]}
    assert {
        ("name", "Ana Ribeiro"),
        ("database", "PostgreSQL 15"),
        ("uses", "Airflow"),
        ("known_issues", "nightly export keeps failing"),
        ("email", "ana@lumen.example"),
    } <= facts
    session = api_a.get("/v1/sessions/chat-1").json()
    assert session["status"] == "ended"

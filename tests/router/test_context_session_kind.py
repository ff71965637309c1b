"""POST /v1/context passes session_kind to procedure matching, so session_kinds triggers fire there too."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

PROCEDURE = {
    "name": "Support tone",
    "description": "support sessions",
    "trigger": {"session_kinds": ["support"]},
    "behaviour": "Acknowledge the problem before proposing a fix.",
}


def _procedural(api, **extra) -> list[str]:
    body = {"subject": "u1", "query": "hello there", "max_tokens": 1000, **extra}
    response = api.post("/v1/context", body, format="json")
    assert response.status_code == 200, response.json()
    return [item["text"] for item in response.json()["layers"]["procedural"]]


def test_a_session_kind_trigger_fires_through_the_context(api_a) -> None:
    assert api_a.post("/v1/procedures", PROCEDURE, format="json").status_code == 201
    assert not any("Acknowledge the problem" in text for text in _procedural(api_a))
    assert any("Acknowledge the problem" in text for text in _procedural(api_a, session_kind="Support"))
    assert not any("Acknowledge the problem" in text for text in _procedural(api_a, session_kind="sales"))


@pytest.mark.isolation("POST /v1/context session_kind")
def test_another_tenants_session_kind_procedure_is_not_offered(api_a, api_b) -> None:
    assert api_a.post("/v1/procedures", PROCEDURE, format="json").status_code == 201
    assert _procedural(api_b, session_kind="support") == []


def test_a_too_long_session_kind_is_a_problem(api_a) -> None:
    response = api_a.post("/v1/context", {"subject": "u1", "session_kind": "x" * 101}, format="json")
    assert response.status_code == 400 and response["Content-Type"].startswith("application/problem+json")

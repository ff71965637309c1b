"""A bounded run of the raw-request fuzzer (tests/api/fuzzing.py) over every /v1/ route: no 5xx, every
4xx a problem+json, every status documented. bench/fuzz_api.py runs the same generator for 20,000+."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings

from tests.api import fuzzing

pytestmark = pytest.mark.django_db

EXAMPLES = 400


def seed_known_ids(client: Any) -> dict[str, list[str]]:
    """A little of everything through the API, so that generated paths also reach real objects."""
    client.post(
        "/v1/episodes",
        {"episodes": [{"subject": "org/alice", "session": "s/1", "content": "Alice likes green tea."}]},
        format="json",
    )
    fact = client.post(
        "/v1/facts",
        {"subject": "org/alice", "entity": "alice", "attribute": "drink", "value": "tea", "statement": "Alice: tea."},
        format="json",
    ).json()["fact"]
    procedure = client.post(
        "/v1/procedures",
        {"name": "greet", "trigger": {"message": "hello"}, "behaviour": "Say hello back.", "steps": ["say hello"]},
        format="json",
    )
    trace = client.post("/v1/context", {"subject": "org/alice", "session": "s/1", "query": "tea"}, format="json")
    erasure = client.post("/v1/subjects/nobody/erasure", {}, format="json")
    history = client.get(f"/v1/facts/{fact['id']}/history").json()
    return {
        "session": ["s/1", "s/2"],
        "subject": ["org/alice", "nobody"],
        "entity": ["alice", "org/alice"],
        "fact_id": [fact["id"]],
        "change_id": [str(c["id"]) for c in history.get("changes", [])][:3],
        "procedure_id": [str(procedure.json()["id"])] if procedure.status_code == 201 else [],
        "trace_id": [trace.json()["trace_id"]] if trace.status_code == 200 else [],
        "request_id": [erasure.json()["id"]] if erasure.status_code == 202 else [],
    }


def test_the_routes_enumerated_from_the_resolver_are_every_documented_path(db) -> None:
    routes = fuzzing.v1_routes()
    assert "/v1/subjects/<extid:subject>/erasure" in {route.template for route in routes}
    schema = json.loads(Client().get("/api/schema/?format=json").content)
    assert {route.openapi_path for route in routes} == {p for p in schema["paths"] if p.startswith("/v1/")}


def test_no_raw_request_makes_the_api_fail(ctx_a, api_a) -> None:  # type: ignore[no-untyped-def]
    schema = json.loads(Client().get("/api/schema/?format=json").content)
    documented = fuzzing.documented_statuses(schema)
    strategy = fuzzing.requests(
        fuzzing.v1_routes(),
        fuzzing.schema_field_names(schema),
        ctx_a.raw_key,
        seed_known_ids(api_a),
        fuzzing.body_shapes(schema),
    )
    client = Client()
    violations: list[str] = []
    statuses: dict[int, int] = {}

    @given(request=strategy)
    @hypothesis_settings(
        max_examples=EXAMPLES,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def run(request: fuzzing.FuzzRequest) -> None:
        response = fuzzing.send(client, request)
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        problem = fuzzing.violation(response, request, documented)
        if problem is not None:
            violations.append(problem)

    run()
    assert violations == [], "\n".join(violations[:20])
    assert len(statuses) >= 5, statuses

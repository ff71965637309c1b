"""The OpenAPI schema says what the API answers: every error status as problem+json, and the success
codes the views really give."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

METHODS = ("get", "post", "put", "patch", "delete")


@cache
def _schema() -> dict[str, Any]:
    response = Client().get("/api/schema/?format=json")
    assert response.status_code == 200
    return json.loads(response.content)


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in _schema()["paths"].items()
        if path.startswith("/v1/")
        for method, operation in item.items()
        if method in METHODS
    ]


def test_the_problem_component_is_rfc_9457() -> None:
    problem = _schema()["components"]["schemas"]["Problem"]
    assert set(problem["properties"]) >= {"type", "title", "status", "detail", "instance", "errors"}
    assert set(problem["properties"]["errors"]["items"]["properties"]) == {"pointer", "detail"}


def test_every_operation_documents_its_error_answers_as_problem_json() -> None:
    missing = []
    for method, path, operation in _operations():
        expected = {"400", "401", "403", "429"}
        if "{" in path:
            expected.add("404")
        if method in ("POST", "PUT", "PATCH"):
            expected |= {"413", "415"}
        for status in sorted(expected):
            response = operation["responses"].get(status)
            content = (response or {}).get("content", {})
            if content.get("application/problem+json", {}).get("schema") != {"$ref": "#/components/schemas/Problem"}:
                missing.append(f"{method} {path} {status}")
    assert missing == []


def test_the_statuses_that_need_a_reason_are_documented_where_the_reason_exists() -> None:
    ops = {(method, path): op for method, path, op in _operations()}
    assert "412" in ops[("PUT", "/v1/sessions/{session}/scratchpad")]["responses"]
    assert "412" in ops[("PATCH", "/v1/sessions/{session}/scratchpad")]["responses"]
    assert "412" in ops[("DELETE", "/v1/sessions/{session}/scratchpad")]["responses"]
    episodes = ops[("POST", "/v1/episodes")]
    assert {"409", "422"} <= set(episodes["responses"])
    assert "Idempotency-Key" in {p["name"] for p in episodes["parameters"]}
    assert "Retry-After" in episodes["responses"]["429"]["headers"]
    assert "412" not in ops[("GET", "/v1/episodes")]["responses"]


def test_deletes_document_the_200_and_the_body_they_answer(api_a) -> None:
    ops = {(method, path): op for method, path, op in _operations()}
    for key in [("DELETE", "/v1/facts/{fact_id}"), ("DELETE", "/v1/sessions/{session}/scratchpad")]:
        responses = ops[key]["responses"]
        assert "204" not in responses, key
        assert "application/json" in responses["200"]["content"], key

    fact = api_a.post(
        "/v1/facts", {"entity": "e", "attribute": "a", "value": "v", "statement": "e a v"}, format="json"
    ).json()["fact"]
    retracted = api_a.delete(f"/v1/facts/{fact['id']}")
    assert retracted.status_code == 200
    assert retracted.json()["id"] == fact["id"]


def test_a_put_that_creates_the_scratchpad_documents_its_201() -> None:
    ops = {(method, path): op for method, path, op in _operations()}
    assert {"200", "201"} <= set(ops[("PUT", "/v1/sessions/{session}/scratchpad")]["responses"])


def test_each_views_nested_serializers_have_a_component_of_their_own() -> None:
    names = set(_schema()["components"]["schemas"])
    assert not names & {"Output", "InputRequest", "Input"}
    assert {"ContextInputRequest", "ContextOutput", "EpisodeSearchOutput"} <= names

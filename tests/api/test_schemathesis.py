"""Property-based run over the whole OpenAPI schema, authenticated, against the live server: no input
makes the API answer 5xx, and every status, media type and body it answers is one the schema documents
(every error the schema documents is problem+json, so every error answered is)."""

from __future__ import annotations

import json

import pytest
import schemathesis
from django.test import Client
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

pytestmark = pytest.mark.django_db


@pytest.mark.live
def test_the_live_server_answers_as_its_schema_says(live_server, ctx_a) -> None:  # type: ignore[no-untyped-def]
    """The external check of issue 22, run from outside over HTTP: no 5xx, and every status, media
    type and body the server answers is one the schema documents for that operation."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    # Content-type conformance holds errors to problem+json because the schema documents every error so.
    raw = json.loads(Client().get("/api/schema/?format=json").content)
    documented_errors = {
        (method, path, status): list(response.get("content", {}))
        for path, item in raw["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "responses" in operation
        for status, response in operation["responses"].items()
        if status.isdigit() and int(status) >= 400
    }
    assert documented_errors
    assert {k: v for k, v in documented_errors.items() if v != ["application/problem+json"]} == {}

    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json")
    headers = {"Authorization": f"Bearer {ctx_a.raw_key}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(base_url=live_server.url, headers=headers, checks=checks)

        try:
            check()
        except Exception as exc:  # noqa: BLE001  (a group of check failures, or a generation error)
            failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:1500]}")
    assert failures == [], "\n".join(failures)

"""Property-based run over the whole OpenAPI schema, authenticated: no input makes the API answer 5xx,
and every error it does answer is problem+json."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def wsgi_app() -> Iterator[object]:
    # As Django's test client does: keep the test's connection (and its transaction) across requests.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def test_no_input_makes_the_api_fail(wsgi_app, ctx_a) -> None:  # type: ignore[no-untyped-def]
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    headers = {"Authorization": f"Bearer {ctx_a.raw_key}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert operations, "the schema lists no operations"
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: schemathesis.Case) -> None:
            response = case.call(headers=headers)
            assert response.status_code < 500, f"{case.method} {case.formatted_path}: {response.text[:300]}"
            if response.status_code >= 400:
                # schemathesis gives headers in wire form: lower-case names, lists of values
                content_type = (response.headers.get("content-type") or [""])[0]
                assert content_type.startswith("application/problem+json"), (
                    f"{case.method} {case.formatted_path} answered {response.status_code} as {content_type}"
                )

        try:
            check()
        except AssertionError as exc:
            failures.append(str(exc).splitlines()[0])
    assert failures == []


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

    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/schema/?format=json")
    headers = {"Authorization": f"Bearer {ctx_a.raw_key}"}
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 30
    failures: list[str] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @hypothesis_settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: schemathesis.Case) -> None:
            case.call_and_validate(base_url=live_server.url, headers=headers, checks=checks)

        try:
            check()
        except Exception as exc:  # noqa: BLE001  (a group of check failures, or a generation error)
            failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:1500]}")
    assert failures == [], "\n".join(failures)

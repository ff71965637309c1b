"""Every /v1/ route answers 403 to a key without the scope the documented table (docs/security.md,
"Scopes per route") names for it, and never 403 to a key with it. The table must cover every route."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tenants.services import api_key_create
from tests.api.fuzzing import v1_routes
from tests.conftest import TenantContext

pytestmark = pytest.mark.django_db

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
SAMPLE_PARAMS = {"uuid": "00000000-0000-0000-0000-000000000001", "int": "1"}
ROW = re.compile(r"^\|\s*(GET|POST|PUT|PATCH|DELETE)\s*\|\s*`([^`]+)`\s*\|\s*(read|write|admin)\s*\|")


def documented_scopes() -> dict[tuple[str, str], str]:
    text = DOC.read_text()
    section = text.split("### Scopes per route", 1)[1].split("\n#", 1)[0]
    return {(m[1], m[2]): m[3] for line in section.splitlines() if (m := ROW.match(line.strip()))}


def operations() -> list[tuple[str, str, str]]:
    out = []
    for route in v1_routes():
        path = route.template
        for converter, name in route.converters:
            path = path.replace(f"<{converter}:{name}>", SAMPLE_PARAMS.get(converter, "s-1"))
        out.extend((method, route.openapi_path, path) for method in route.methods)
    return out


def test_the_table_names_every_route_and_only_routes() -> None:
    table = documented_scopes()
    served = {(method, template) for method, template, _ in operations()}
    assert set(table) == served


@pytest.mark.parametrize(("method", "template", "path"), operations())
def test_each_route_needs_exactly_its_documented_scope(
    ctx_a: TenantContext, method: str, template: str, path: str
) -> None:
    needed = documented_scopes()[(method, template)]
    for scope in ("read", "write", "admin"):
        client = APIClient()
        client.credentials(
            HTTP_AUTHORIZATION=f"Bearer {api_key_create(tenant=ctx_a.tenant, name=scope, scopes=(scope,)).raw}"
        )
        response = client.generic(method, path, "{}", content_type="application/json")
        allowed = scope in (needed, "admin")
        assert (response.status_code != 403) == allowed, (scope, needed, response.status_code, response.content[:200])

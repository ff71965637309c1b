"""Error messages that say the fix: the shape a body should have, the media type to send, the route
meant, the header format; each still an RFC 9457 problem."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.conftest import TenantContext

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def test_a_bare_episode_without_the_wrapper_is_told_the_shape_expected(ctx_a: TenantContext) -> None:
    episode = {"subject": "u1", "session": "s1", "role": "user", "content": "hello"}
    response = ctx_a.client.post("/v1/episodes", episode, format="json")
    assert response.status_code == 400
    body = response.json()
    assert '{"episodes": [' in body["detail"], body
    assert [e["pointer"] for e in body["errors"]] == ["/"]
    assert ctx_a.client.get("/v1/episodes").json()["results"] == []


def test_an_unknown_field_beside_the_wrapper_is_still_named(ctx_a: TenantContext) -> None:
    response = ctx_a.client.post("/v1/episodes", {"episodes": [], "zz": 1}, format="json")
    assert response.status_code == 400
    assert [e["pointer"] for e in response.json()["errors"]] == ["/zz"]


@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"]
)
def test_a_body_that_is_not_json_is_a_415_naming_application_json(ctx_a: TenantContext, content_type: str) -> None:
    response = ctx_a.client.generic("POST", "/v1/facts", "entity=user&attribute=tea", content_type=content_type)
    assert response.status_code == 415
    assert response["Content-Type"] == PROBLEM
    assert "Content-Type: application/json" in response.json()["detail"]


@pytest.mark.parametrize(
    ("path", "meant"),
    [
        ("/v1/fact", "/v1/facts"),
        ("/v1/episode", "/v1/episodes"),
        ("/v1/episodes/serch", "/v1/episodes/search"),
        ("/v1/sessions", "/v1/sessions/{session}"),
        ("/v1/procedure/match", "/v1/procedures/match"),
        ("/v1/contexts", "/v1/context"),
    ],
)
def test_an_unknown_path_names_the_closest_route_and_the_docs(api_a: APIClient, path: str, meant: str) -> None:
    response = api_a.get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == PROBLEM
    detail = response.json()["detail"]
    assert f"Did you mean {meant}?" in detail, detail
    assert "/api/docs/" in detail


def test_an_unknown_path_far_from_every_route_links_the_docs_alone(api_a: APIClient) -> None:
    detail = api_a.get("/v1/zzzzzzzzzzzzzzzzzzzz").json()["detail"]
    assert "Did you mean" not in detail and "/api/docs/" in detail


@pytest.mark.parametrize("header", [None, "Token abc", "bearer"])
def test_a_missing_or_malformed_authorization_header_says_the_bearer_format(
    ctx_a: TenantContext, header: str | None
) -> None:
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    response = client.get("/v1/facts")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == 'Bearer realm="engram"'
    assert "Authorization: Bearer <api key>" in response.json()["detail"], response.json()

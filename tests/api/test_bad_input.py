"""Crafted input found by hand and by the fuzzers: each answers a 4xx problem+json and changes nothing."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote

import pytest

from core.embedding import EMBEDDING_DIM
from episodic.models import Episode, Passage
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


def _is_problem(response, status: int) -> dict:
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == PROBLEM
    body = json.loads(response.content)
    assert body["status"] == status
    return body


def _post_raw(client, path: str, raw: str):
    return client.generic("POST", path, raw.encode("utf-8", "surrogatepass"), content_type="application/json")


def test_a_cursor_whose_position_is_not_a_timestamp_is_a_400(api_a) -> None:
    cursor = base64.b64encode(b"p=foo").decode()
    response = api_a.get("/v1/episodes", {"subject": "x", "cursor": cursor})
    body = _is_problem(response, 400)
    assert body["errors"][0]["pointer"] == "/cursor"


def test_every_list_refuses_a_cursor_with_a_bad_position(api_a) -> None:
    cursor = base64.b64encode(b"o=1&p=2020-13-45").decode()
    for path in ("/v1/episodes?subject=x", "/v1/facts?", "/v1/procedures?", "/v1/traces?"):
        _is_problem(api_a.get(f"{path}&cursor={quote(cursor)}"), 400)


def test_a_malformed_cursor_is_a_400(api_a) -> None:
    _is_problem(api_a.get("/v1/episodes", {"subject": "x", "cursor": "!!!not base64"}), 400)
    _is_problem(api_a.get("/v1/episodes", {"subject": "x", "cursor": "A" * 5000}), 400)


def test_a_lone_surrogate_in_episode_content_is_refused_with_its_pointer(api_a, tenant_a) -> None:
    raw = '{"episodes": [{"subject": "s", "session": "t", "content": "a\\ud800b"}]}'
    body = _is_problem(_post_raw(api_a, "/v1/episodes", raw), 400)
    assert body["errors"] == [{"pointer": "/episodes/0/content", "detail": body["errors"][0]["detail"]}]
    assert "surrogate" in body["errors"][0]["detail"]
    with tenant_scope(tenant_a):
        assert Episode.objects.count() == 0


@pytest.mark.parametrize(
    ("path", "raw"),
    [
        ("/v1/facts", '{"entity": "a\\udfffb", "attribute": "x", "value": "y", "statement": "z"}'),
        ("/v1/facts", '{"entity": "a", "attribute": "x", "value": {"k\\ud800": 1}}'),
        ("/v1/facts/search", '{"query": "\\ud800"}'),
        ("/v1/episodes/search", '{"query": "q\\udc00", "subject": "s"}'),
        ("/v1/context", '{"subject": "s", "query": "\\ud83d"}'),
        ("/v1/procedures/match", '{"message": "\\ud800"}'),
        ("/v1/episodes", '{"episodes": [{"subject": "s", "session": "t", "content": "a\\u0000b"}]}'),
        ("/v1/context", '{"subject": "s\\u0000", "query": "q"}'),
    ],
)
def test_surrogates_and_nul_anywhere_in_a_body_are_a_400(api_a, path: str, raw: str) -> None:
    body = _is_problem(_post_raw(api_a, path, raw), 400)
    assert body["errors"][0]["pointer"].startswith("/")


def test_a_surrogate_pair_written_as_two_escapes_is_one_character_and_welcome(api_a) -> None:
    raw = '{"episodes": [{"subject": "s", "session": "t", "content": "smile \\ud83d\\ude00"}]}'
    response = _post_raw(api_a, "/v1/episodes", raw)
    assert response.status_code == 201, response.content
    listed = api_a.get("/v1/episodes", {"subject": "s"}).json()["results"]
    assert listed[0]["content"] == "smile \U0001f600"


def test_a_body_nested_100000_arrays_deep_is_a_400(api_a) -> None:
    raw = '{"episodes": ' + "[" * 100_000 + "]" * 100_000 + "}"
    body = _is_problem(_post_raw(api_a, "/v1/episodes", raw), 400)
    assert "nested" in body["detail"]


def test_a_body_nested_a_little_too_deep_is_a_400_even_where_no_recursion_fails(api_a) -> None:
    raw = '{"query": "q", "x": ' + "[" * 200 + "]" * 200 + "}"
    _is_problem(_post_raw(api_a, "/v1/facts/search", raw), 400)


def test_a_body_that_is_not_utf8_is_a_400(api_a) -> None:
    response = api_a.generic("POST", "/v1/episodes", b'{"episodes": "\xff\xfe"}', content_type="application/json")
    _is_problem(response, 400)


@pytest.mark.parametrize("query", ["subject=a%00b", "session=%00", "entity=x%00"])
def test_nul_in_a_query_string_is_a_400(api_a, query: str) -> None:
    _is_problem(api_a.get(f"/v1/episodes?{query}"), 400)


def test_nul_in_a_path_is_a_400_problem(api_a) -> None:
    for path in ("/v1/subjects/a%00b/export", "/v1/entities/a%00b/graph", "/v1/sessions/a%00/scratchpad"):
        response = api_a.get(path)
        assert response.status_code == 400, (path, response.status_code)
        assert response["Content-Type"] == PROBLEM


@pytest.mark.isolation("v1-not-found")
def test_an_unknown_route_under_v1_is_a_404_problem(api_a, api_b) -> None:
    assert api_a.get("/v1/no-such-thing").content == api_b.get("/v1/no-such-thing").content
    body = _is_problem(api_a.get("/v1/no-such-thing"), 404)
    assert body["type"] == "/problems/not-found"
    _is_problem(api_a.post("/v1/subjects/a/b/c/nothing", {}, format="json"), 404)


def test_an_unknown_route_under_v1_is_a_404_problem_in_debug_too(api_a, settings) -> None:
    settings.DEBUG = True
    _is_problem(api_a.get("/v1/subjects/a/b/c/nothing"), 404)
    _is_problem(api_a.get("/v1/"), 404)


def test_a_problem_names_its_instance(api_a) -> None:
    assert _is_problem(api_a.get("/v1/no-such-thing"), 404)["instance"] == "/v1/no-such-thing"
    assert _is_problem(api_a.get("/v1/facts/00000000-0000-0000-0000-000000000000"), 404)["instance"] == (
        "/v1/facts/00000000-0000-0000-0000-000000000000"
    )


def test_a_write_to_an_unknown_route_is_a_404_problem_not_a_csrf_page(ctx_a) -> None:
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {ctx_a.raw_key}")
    _is_problem(client.post("/v1/procedures/-5/outcomes", {"applied": True}, format="json"), 404)


@pytest.mark.parametrize("field", ["kind", "outcome"])
@pytest.mark.parametrize("value", [{}, [], ["message"]])
def test_an_enumerated_episode_field_of_another_type_is_a_400(api_a, field: str, value) -> None:
    item = {"subject": "s", "session": "t", "content": "c", field: value}
    body = _is_problem(api_a.post("/v1/episodes", {"episodes": [item]}, format="json"), 400)
    assert body["errors"][0]["pointer"] == f"/episodes/0/{field}"


def test_a_format_or_accept_that_names_no_renderer_still_answers_json(api_a) -> None:
    response = api_a.get("/v1/tenant?format=-9223372036854775809", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("field", "value"),
    [("outcome_signal", 10**400), ("embedding", [10**400] + [0.0] * (EMBEDDING_DIM - 1))],
    ids=["outcome_signal", "embedding"],
)
def test_an_episode_number_too_large_for_a_float_is_a_400(api_a, tenant_a, field: str, value) -> None:
    item = {"subject": "s", "session": "t", "content": "c", field: value}
    body = _is_problem(api_a.post("/v1/episodes", {"episodes": [item]}, format="json"), 400)
    assert body["errors"][0]["pointer"] == f"/episodes/0/{field}"
    with tenant_scope(tenant_a):
        assert Episode.objects.count() == 0


@pytest.mark.parametrize("occurred_at", ["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00"])
def test_an_occurred_at_outside_the_years_1_to_9999_in_utc_is_a_400(api_a, tenant_a, occurred_at: str) -> None:
    item = {"subject": "s", "session": "t", "content": "c", "occurred_at": occurred_at}
    body = _is_problem(api_a.post("/v1/episodes", {"episodes": [item]}, format="json"), 400)
    assert body["errors"][0]["pointer"] == "/episodes/0/occurred_at"
    with tenant_scope(tenant_a):
        assert Episode.objects.count() == 0


def test_the_first_and_last_instants_of_the_years_1_to_9999_are_stored_and_read_back(api_a) -> None:
    items = [
        {"subject": "s", "session": "t", "content": "first", "occurred_at": "0001-01-01T00:00:00Z"},
        {"subject": "s", "session": "t", "content": "last", "occurred_at": "9999-12-31T23:59:59.999999Z"},
    ]
    assert api_a.post("/v1/episodes", {"episodes": items}, format="json").status_code == 201
    listed = api_a.get("/v1/episodes", {"subject": "s", "order": "asc"})
    assert listed.status_code == 200
    assert [e["occurred_at"] for e in listed.json()["results"]] == [
        "0001-01-01T00:00:00+00:00",
        "9999-12-31T23:59:59.999999+00:00",
    ]


def _direction(scale: float = 1.0) -> list[float]:
    return [scale, -scale] + [0.0] * (EMBEDDING_DIM - 2)


def test_a_zero_vector_has_no_direction_and_is_a_400(api_a, tenant_a) -> None:
    item = {"subject": "s", "session": "t", "content": "tea", "embedding": [0.0] * EMBEDDING_DIM}
    body = _is_problem(api_a.post("/v1/episodes", {"episodes": [item]}, format="json"), 400)
    assert body["errors"][0]["pointer"] == "/episodes/0/embedding"
    with tenant_scope(tenant_a):
        assert Episode.objects.count() == 0
    search = {"query": "tea", "query_embedding": [0.0] * EMBEDDING_DIM}
    body = _is_problem(api_a.post("/v1/episodes/search", search, format="json"), 400)
    assert body["errors"][0]["pointer"] == "/query_embedding"


@pytest.mark.parametrize("scale", [1e30, 1e-30], ids=["huge", "tiny"])
def test_an_embedding_of_any_magnitude_is_ranked_by_its_direction(api_a, scale: float) -> None:
    # In pgvector's 32-bit arithmetic the squares of such components overflow or vanish.
    item = {"subject": "s", "session": "t", "content": "tea", "embedding": _direction(scale)}
    assert api_a.post("/v1/episodes", {"episodes": [item]}, format="json").status_code == 201
    for query_embedding in (_direction(), _direction(scale)):
        search = {"query": "tea", "query_embedding": query_embedding}
        response = api_a.post("/v1/episodes/search", search, format="json")
        assert response.status_code == 200, response.content[:300]
        assert response.json()["results"][0]["score_parts"]["vector"] == pytest.approx(1.0)
    assert api_a.post("/v1/episodes/search", {"query": "tea"}, format="json").status_code == 200
    assert api_a.post("/v1/context", {"subject": "s", "query": "tea"}, format="json").status_code == 200


def test_a_stored_vector_without_a_direction_ranks_as_unrelated(api_a, tenant_a) -> None:
    """A row written before the zero vector was refused: its cosine is NaN, which JSON cannot carry."""
    item = {"subject": "s", "session": "t", "content": "tea", "embedding": _direction()}
    assert api_a.post("/v1/episodes", {"episodes": [item]}, format="json").status_code == 201
    with tenant_scope(tenant_a):
        Episode.objects.update(embedding=[0.0] * EMBEDDING_DIM)
        Passage.objects.update(embedding=[0.0] * EMBEDDING_DIM)
    for search in ({"query": "tea"}, {"query": "tea", "query_embedding": _direction()}):
        response = api_a.post("/v1/episodes/search", search, format="json")
        assert response.status_code == 200, response.content[:300]
        assert response.json()["results"][0]["score_parts"]["vector"] == 0.0
    assert api_a.post("/v1/context", {"subject": "s", "query": "tea"}, format="json").status_code == 200


@pytest.mark.parametrize(
    ("occurred_at", "stored"),
    [
        ("0976-01-02T00:55:32.954620-21:35", "0976-01-02T22:30:32.954620+00:00"),
        ("2024-05-01T12:00:00+23:59", "2024-04-30T12:01:00+00:00"),
    ],
)
def test_an_occurred_at_with_an_offset_beyond_postgresqls_is_stored_as_its_instant(
    api_a, occurred_at: str, stored: str
) -> None:
    """ISO 8601 allows offsets up to 23:59, PostgreSQL only up to 15:59: the instant goes in, in UTC
    (schemathesis's live test found the 500 "time zone displacement out of range")."""
    item = {"subject": "s", "session": "t", "content": "c", "occurred_at": occurred_at}
    assert api_a.post("/v1/episodes", {"episodes": [item]}, format="json").status_code == 201
    listed = api_a.get("/v1/episodes", {"subject": "s"}).json()["results"]
    assert [e["occurred_at"] for e in listed] == [stored]

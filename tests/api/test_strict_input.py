"""One rule for every /v1/ route: an unknown body field or a value of the wrong JSON type is a 400 naming
the field by JSON pointer; a cursor that does not parse and a limit that is not 1 to 500 are a 400 naming
the parameter. Walks the OpenAPI schema, so a new route or field is held to the rule without a change."""

from __future__ import annotations

import json
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from tests.conftest import TenantContext

pytestmark = pytest.mark.django_db

SAMPLE = {"fact_id": "00000000-0000-0000-0000-000000000001", "trace_id": "00000000-0000-0000-0000-000000000001"}
LISTS = ["/v1/episodes", "/v1/facts", "/v1/procedures", "/v1/entities/aliases", "/v1/traces"]


def _schema() -> dict[str, Any]:
    return SchemaGenerator().get_schema(request=None, public=True)  # type: ignore[no-any-return]


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref", "")
    return schema["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else node


def _body_schemas() -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, body schema) of every operation whose JSON body is an object with known fields."""
    schema = _schema()
    out = []
    for template, item in schema["paths"].items():
        if not template.startswith("/v1/"):
            continue
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if not content:
                continue
            body = _resolve(schema, content["schema"])
            if body.get("properties"):
                path = template
                for name in ("session", "subject", "entity"):
                    path = path.replace("{" + name + "}", "s-1")
                for name, value in SAMPLE.items():
                    path = path.replace("{" + name + "}", value)
                path = path.replace("{change_id}", "1").replace("{procedure_id}", "1")
                out.append((method.upper(), path, body))
    return out


def _body_operations() -> list[tuple[str, str, list[str]]]:
    """(method, path, field names) of every operation whose JSON body is an object with known fields."""
    return [(method, path, sorted(body["properties"])) for method, path, body in _body_schemas()]


def _pointers(response: Any) -> set[str]:
    return {error["pointer"] for error in response.json().get("errors", [])}


@pytest.mark.parametrize(("method", "path", "fields"), _body_operations())
def test_an_unknown_body_field_is_a_400_naming_it(
    ctx_a: TenantContext, method: str, path: str, fields: list[str]
) -> None:
    response = ctx_a.client.generic(method, path, '{"zz_unknown": 1}', content_type="application/json")
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert "/zz_unknown" in _pointers(response)


def test_booleans_are_not_numbers_and_numbers_are_not_strings(ctx_a: TenantContext) -> None:
    fact = {"entity": "user", "attribute": "tea", "value": "green", "statement": "The user likes green tea."}
    for field, wrong in [("confidence", True), ("value", 5), ("source_episode_ids", [True])]:
        response = ctx_a.client.post("/v1/facts", {**fact, field: wrong}, format="json")
        assert response.status_code == 400, (field, response.content[:300])
        assert any(p.startswith(f"/{field}") for p in _pointers(response)), (field, _pointers(response))
    assert ctx_a.client.post("/v1/facts", fact, format="json").status_code == 201
    context = ctx_a.client.post("/v1/context", {"subject": "u", "budgets": {"semantic": True}}, format="json")
    assert context.status_code == 400
    assert "/budgets/semantic" in _pointers(context)
    feedback = {"asked_to_repeat": "yes"}
    response = ctx_a.client.post(f"/v1/context/{SAMPLE['trace_id']}/feedback", feedback, format="json")
    assert response.status_code == 400
    assert "/asked_to_repeat" in _pointers(response)


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("cursor", ["!!!***", "%%%", "-_-_", "abc", "cD0x"])
def test_a_cursor_that_does_not_parse_is_a_400(ctx_a: TenantContext, path: str, cursor: str) -> None:
    response = ctx_a.client.get(path, {"cursor": cursor})
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert _pointers(response) == {"/cursor"}


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize("limit", ["-1", "0", "abc", "501", "1.5"])
def test_a_limit_outside_one_to_five_hundred_is_a_400(ctx_a: TenantContext, path: str, limit: str) -> None:
    response = ctx_a.client.get(path, {"limit": limit})
    assert response.status_code == 400, (response.status_code, response.content[:300])
    assert _pointers(response) == {"/limit"}


def test_a_cursor_from_a_page_still_works_and_limit_holds(ctx_a: TenantContext) -> None:
    for i in range(3):
        fact = {"entity": f"e{i}", "attribute": "a", "value": "v", "statement": f"e{i} a v."}
        assert ctx_a.client.post("/v1/facts", fact, format="json").status_code == 201
    first = ctx_a.client.get("/v1/facts", {"limit": "2"}).json()
    assert len(first["results"]) == 2
    second = ctx_a.client.get(first["next"])
    assert second.status_code == 200
    assert len(second.json()["results"]) == 1


# A string that reads as a value of the field's type: DRF alone would parse every one of them.
STRING_FOR = {"integer": "1", "number": "0.5", "boolean": "true"}
VALID_FOR = {"integer": 1, "number": 0.5, "boolean": True, "string": "x", "object": {}}


def _typed_leaves(schema: dict[str, Any], node: dict[str, Any], pointer: str = "") -> list[tuple[str, str]]:
    """(JSON pointer, type) of every integer, number and boolean in a request body's schema; an array's
    items at index 0, an object's values under the key `k`."""
    node = _resolve(schema, node)
    kind = node.get("type")
    if kind in STRING_FOR:
        return [(pointer, kind)]
    out: list[tuple[str, str]] = []
    for name, child in node.get("properties", {}).items():
        out.extend(_typed_leaves(schema, child, f"{pointer}/{name}"))
    if isinstance(node.get("additionalProperties"), dict):
        out.extend(_typed_leaves(schema, node["additionalProperties"], f"{pointer}/k"))
    if kind == "array":
        out.extend(_typed_leaves(schema, node.get("items", {}), f"{pointer}/0"))
    return out


def _body_with(schema: dict[str, Any], node: dict[str, Any], tokens: list[str], wrong: Any) -> Any:
    """A value of `node`'s schema with `wrong` at the pointer `tokens`; arrays as long as they must be,
    their other items valid, so that only the type is at fault."""
    node = _resolve(schema, node)
    if not tokens:
        return wrong
    head, rest = tokens[0], tokens[1:]
    if node.get("type") == "array":
        item = _resolve(schema, node.get("items", {}))
        items = [VALID_FOR.get(item.get("type", "object"), {}) for _ in range(max(node.get("minItems", 1), 1))]
        items[0] = _body_with(schema, item, rest, wrong)
        return items
    child = node.get("properties", {}).get(head) or node.get("additionalProperties")
    body: dict[str, Any] = {"subject": "s-1"} if head == "0" else {}
    body[head] = _body_with(schema, child, rest, wrong)
    return body


def _typed_fields() -> list[tuple[str, str, str, str]]:
    schema = _schema()
    return [
        (method, path, pointer, kind)
        for method, path, body in _body_schemas()
        for pointer, kind in _typed_leaves(schema, body)
    ]


@pytest.mark.parametrize(("method", "path", "pointer", "kind"), _typed_fields())
def test_a_string_where_a_number_or_boolean_belongs_is_a_400_naming_it(
    ctx_a: TenantContext, method: str, path: str, pointer: str, kind: str
) -> None:
    schema = _schema()
    operation = next(body for m, p, body in _body_schemas() if (m, p) == (method, path))
    body = _body_with(schema, operation, pointer.split("/")[1:], STRING_FOR[kind])
    response = ctx_a.client.generic(method, path, json.dumps(body), content_type="application/json")
    assert response.status_code == 400, (pointer, response.status_code, response.content[:300])
    parent = pointer.rsplit("/", 1)[0]
    # An array of numbers may be judged whole (its pointer), never by the length or a later step.
    assert pointer in _pointers(response) or (pointer.endswith("/0") and parent in _pointers(response)), (
        pointer,
        response.json(),
    )


def test_a_fact_with_its_confidence_as_a_string_is_refused(ctx_a: TenantContext) -> None:
    fact = {"entity": "user", "attribute": "tea", "value": "green", "statement": "The user likes green tea."}
    response = ctx_a.client.post("/v1/facts", {**fact, "confidence": "0.5"}, format="json")
    assert response.status_code == 400
    assert _pointers(response) == {"/confidence"}
    assert ctx_a.client.get("/v1/facts").json()["results"] == []

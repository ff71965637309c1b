"""Raw-request fuzzing of every /v1/ route, shared by the test suite (tests/api/test_fuzz.py, a bounded
run) and the bench (bench/fuzz_api.py, a long one).

Unlike schemathesis, which generates what the schema describes, this sends what a careless client or
an attacker sends: bodies that are not JSON, not UTF-8, nested 100,000 deep, with lone surrogates and
NUL in keys and values, integers of thousands of digits, wrong types for every known field; query
strings with NUL, altered and over-long cursors; bad content types, Idempotency-Key, If-Match and
Authorization values. Routes come from the URL resolver and field names from the OpenAPI schema, so a
new route or field is fuzzed without touching this file.

What must hold for every request: no 5xx; every 4xx is problem+json whose `status` is the HTTP status;
and, where the route and method are a documented operation, the status is one the schema documents.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import strategies as st

PROBLEM = "application/problem+json"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<name>[^>]+)>")


@dataclass(frozen=True)
class Route:
    template: str  # "/v1/sessions/<extid:session>/scratchpad"
    methods: tuple[str, ...]

    @property
    def openapi_path(self) -> str:
        return _PARAM.sub(lambda m: "{" + m.group("name") + "}", self.template)

    @property
    def converters(self) -> list[tuple[str, str]]:
        return [(m.group("converter") or "str", m.group("name")) for m in _PARAM.finditer(self.template)]


def _walk(patterns: list[Any], prefix: str) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for pattern in patterns:
        route = str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found.extend(_walk(pattern.url_patterns, prefix + route))
        elif isinstance(pattern, URLPattern):
            found.append((prefix + route, pattern.callback))
    return found


def v1_routes() -> list[Route]:
    """Every /v1/ route of the URL resolver that a view class answers (the catch-all 404 aside)."""
    routes = []
    for template, callback in _walk(get_resolver().url_patterns, "/"):
        view_class = getattr(callback, "view_class", None)
        if not template.startswith("/v1/") or view_class is None:
            continue
        methods = tuple(m for m in METHODS if hasattr(view_class, m.lower()))
        routes.append(Route(template=template, methods=methods))
    return routes


def documented_statuses(schema: dict[str, Any]) -> dict[tuple[str, str], set[int]]:
    out: dict[tuple[str, str], set[int]] = {}
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method.upper() in METHODS:
                out[(method.upper(), path)] = {int(code) for code in operation["responses"] if code.isdigit()}
    return out


def schema_field_names(schema: dict[str, Any]) -> list[str]:
    """Every property and parameter name the schema mentions: the fuzzer's vocabulary."""
    names: set[str] = set()

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "properties" and isinstance(value, dict):
                    names.update(value)
                visit(value)
            if node.get("in") in ("query", "header") and isinstance(node.get("name"), str):
                names.add(node["name"])
        elif isinstance(node, list):
            for item in node:
                visit(item)

    visit(schema)
    return sorted(names)


@dataclass(frozen=True)
class BodyShape:
    """The fields of an operation's JSON body, and of the objects in its array fields."""

    fields: tuple[str, ...]
    nested: tuple[tuple[str, tuple[str, ...]], ...] = ()


def body_shapes(schema: dict[str, Any]) -> dict[tuple[str, str], BodyShape]:
    components = schema.get("components", {}).get("schemas", {})

    def resolve(node: dict[str, Any]) -> dict[str, Any]:
        ref = node.get("$ref", "")
        return components.get(ref.rsplit("/", 1)[-1], {}) if ref else node

    shapes: dict[tuple[str, str], BodyShape] = {}
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json")
            if method.upper() not in METHODS or not content:
                continue
            body = resolve(content.get("schema", {}))
            properties = body.get("properties", {})
            nested = []
            for name, prop in properties.items():
                items = resolve(prop.get("items", {})) if prop.get("type") == "array" else {}
                if items.get("properties"):
                    nested.append((name, tuple(items["properties"])))
            shapes[(method.upper(), path)] = BodyShape(tuple(properties), tuple(nested))
    return shapes


@dataclass
class FuzzRequest:
    method: str
    route: Route
    path: str
    query: str
    body: bytes | None
    headers: dict[str, str] = field(default_factory=dict)
    address: str = "127.0.0.1"

    def describe(self) -> str:
        body = (self.body or b"")[:200]
        return f"{self.method} {self.path}?{self.query[:200]} headers={self.headers} body={body!r}"


# Text as attackers write it: any code point, lone surrogates and NUL included, with some weight on
# the awkward ones.
_chars = st.one_of(
    st.characters(codec=None, exclude_categories=()),
    st.sampled_from(["\x00", "\ud800", "\udfff", "\ud83d", "/", "%", "\n", "\u202e", "\ufeff", "'", '"', "\\"]),
)
_text = st.text(_chars, max_size=40) | st.sampled_from(["", " ", "x" * 300, "a/b", "..", "%2F", "null"])
_huge_int = st.integers(min_value=-(10**40), max_value=10**40) | st.sampled_from(
    [2**63, -(2**63) - 1, 10**400, 10**4299]
)
# Timestamps at the edges of what Python and PostgreSQL can hold, before and after conversion to UTC.
_timestamp = st.sampled_from(
    [
        "2024-05-01T12:00:00Z",
        "2024-05-01T12:00:00",
        "0001-01-01T00:00:00Z",
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59.999999Z",
        "9999-12-31T23:59:59-14:00",
        "10000-01-01T00:00:00Z",
    ]
)
_scalar = st.one_of(
    st.none(), st.booleans(), _huge_int, st.integers(-5, 5), st.floats(allow_nan=False), _text, _timestamp
)


def _json_values(field_names: list[str]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(field_names) | _text
    return st.recursive(
        _scalar,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6),
        max_leaves=20,
    )


def _cursor() -> st.SearchStrategy[str]:
    positions = st.one_of(_text, st.sampled_from(["2024-01-01T00:00:00+00:00", "2020-13-45", "foo", "\x00", ""]))
    offsets = st.one_of(st.integers(-(10**6), 10**6).map(str), _text)
    encoded = st.builds(
        lambda o, r, p: base64.b64encode(urlencode({"o": o, "r": r, "p": p}, errors="surrogatepass").encode()).decode(),
        offsets,
        st.sampled_from(["0", "1", "x"]),
        positions,
    )
    return st.one_of(encoded, _text, st.sampled_from(["A" * 5000, "cD1mb28=", "!!"]))


def _raw_body(field_names: list[str]) -> st.SearchStrategy[bytes | None]:
    def dumps(value: Any) -> bytes:
        # ensure_ascii writes a lone surrogate as its \u escape, as a client's JSON library would
        return json.dumps(value).encode()

    keys = st.sampled_from(field_names)
    shaped = st.dictionaries(keys, _json_values(field_names), max_size=8)
    batch = st.builds(lambda items: {"episodes": items}, st.lists(shaped, max_size=3))
    return st.one_of(
        st.none(),
        st.just(b""),
        shaped.map(dumps),
        batch.map(dumps),
        _json_values(field_names).map(dumps),
        st.integers(1, 200_000).map(lambda n: b'{"episodes": ' + b"[" * n + b"]" * n + b"}"),
        st.integers(1, 200_000).map(lambda n: b"{" + b'"a":{' * n + b"1" + b"}" * n + b"}"),
        st.integers(4000, 20_000).map(lambda n: b'{"k": ' + b"9" * n + b"}"),
        st.binary(max_size=64),
        st.sampled_from([b"{", b"[1,", b'{"a": NaN}', b'{"a": Infinity}', b"\xff\xfe{}", b'"\\ud800"', b"null"]),
    )


_content_types = st.sampled_from(
    [
        "application/json",
        "application/json",
        "application/merge-patch+json",
        "application/json; charset=latin-1",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
        "",
        "*/*",
        "application/json\x00",
    ]
)
# Header values as a WSGI server hands them over: latin-1 code points.
_header_text = st.text(st.characters(min_codepoint=0, max_codepoint=255), max_size=300) | st.sampled_from(
    ["", "x" * 256, "x" * 255, '"3"', 'W/"1"', "*", "-1", "99999999999999999999", '"abc"']
)


def _shaped_body(shape: BodyShape, field_names: list[str]) -> st.SearchStrategy[bytes]:
    """The operation's own fields, each present or not, each with a value of any type: wrong types
    where validation must refuse them, right ones often enough to get past the first check."""
    values = _json_values(field_names)

    def fields(names: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries({}, optional=dict.fromkeys(names, values))

    strategy = fields(shape.fields)
    for name, item_fields in shape.nested:
        strategy = st.builds(
            lambda d, items, n=name: {**d, n: items}, strategy, st.lists(fields(item_fields), max_size=3)
        )
    return strategy.map(lambda value: json.dumps(value).encode())


def requests(
    routes: list[Route],
    field_names: list[str],
    raw_key: str,
    known_ids: dict[str, list[str]],
    shapes: dict[tuple[str, str], BodyShape] | None = None,
) -> Any:
    """A strategy of FuzzRequests over `routes`; `known_ids` maps a path parameter name to real ids,
    so that a share of the requests reach the objects and not only the 404s."""

    @st.composite
    def build(draw: Any) -> FuzzRequest:
        route = draw(st.sampled_from(routes))
        method = draw(st.sampled_from(route.methods)) if draw(st.integers(0, 4)) else draw(st.sampled_from(METHODS))
        path = route.template
        for converter, name in route.converters:
            if converter == "int":
                generated = st.integers(0, 10**30).map(str)
            elif converter == "uuid":
                generated = st.uuids().map(str)
            else:
                generated = _text.filter(bool)
            choice = st.sampled_from(known_ids[name]) | generated if known_ids.get(name) else generated
            value = draw(choice)
            path = path.replace(f"<{converter}:{name}>", quote(value.encode("utf-8", "surrogatepass"), safe=""))
        query_keys = st.sampled_from([*field_names, "cursor", "limit", "summarise", "order", "depth"]) | _text
        query_values = st.one_of(_text, _huge_int.map(str), _cursor())
        pairs = draw(st.lists(st.tuples(query_keys, query_values), max_size=5))
        query = "&".join(
            f"{quote(k.encode('utf-8', 'surrogatepass'))}={quote(v.encode('utf-8', 'surrogatepass'))}" for k, v in pairs
        )
        shape = (shapes or {}).get((method, route.openapi_path))
        if shape is not None and draw(st.booleans()):
            body: bytes | None = draw(_shaped_body(shape, field_names))
        elif method in ("POST", "PUT", "PATCH") or draw(st.integers(0, 3)) == 0:
            body = draw(_raw_body(field_names))
        else:
            body = None
        headers: dict[str, str] = {}
        auth = draw(st.sampled_from(["good"] * 17 + ["none", "bad", "garbage"]))
        if auth == "good":
            headers["Authorization"] = f"Bearer {raw_key}"
        elif auth == "bad":
            # Another prefix than the real key's: enough failures on its prefix would lock the key
            # (tests/api/test_least_privilege.py covers that).
            headers["Authorization"] = f"Bearer eng_{draw(st.binary(min_size=4, max_size=4)).hex()}_{raw_key[-8:]}"
        elif auth == "garbage":
            headers["Authorization"] = draw(_header_text)
        if body is not None:
            headers["Content-Type"] = draw(_content_types)
        for header in ("Idempotency-Key", "If-Match", "If-None-Match"):
            if draw(st.integers(0, 3)) == 0:
                headers[header] = draw(_header_text)
        # Spread over addresses, as failed authentications from one address are throttled.
        address = f"10.{draw(st.integers(0, 255))}.{draw(st.integers(0, 255))}.{draw(st.integers(1, 254))}"
        return FuzzRequest(
            method=method, route=route, path=path, query=query, body=body, headers=headers, address=address
        )

    return build()


def send(client: Client, request: FuzzRequest) -> Any:
    extra = {}
    content_type = "application/octet-stream"
    for name, value in request.headers.items():
        if name == "Content-Type":
            content_type = value
        else:
            extra["HTTP_" + name.upper().replace("-", "_")] = value
    # The test client's generic() unquotes the path into PATH_INFO as a WSGI server does.
    return client.generic(
        request.method,
        request.path + (f"?{request.query}" if request.query else ""),
        data=request.body or b"",
        content_type=content_type,
        REMOTE_ADDR=request.address,
        **extra,
    )


def violation(response: Any, request: FuzzRequest, documented: dict[tuple[str, str], set[int]]) -> str | None:
    """What is wrong with this answer, or None."""
    status = response.status_code
    if status >= 500:
        return f"{status} for {request.describe()}"
    if status >= 400:
        content_type = response.get("Content-Type", "")
        if not content_type.startswith(PROBLEM):
            return f"{status} as {content_type!r} for {request.describe()}"
        try:
            body = json.loads(response.content)
        except ValueError:
            return f"{status} with a body that is not JSON for {request.describe()}"
        if not isinstance(body, dict) or body.get("status") != status or not body.get("title"):
            return f"{status} with a problem body that is not RFC 9457 for {request.describe()}"
    statuses = documented.get((request.method, request.route.openapi_path))
    if statuses is not None and status not in statuses and status != 405:
        return f"{status} is not documented for {request.method} {request.route.openapi_path}: {request.describe()}"
    return None

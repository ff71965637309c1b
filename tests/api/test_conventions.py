"""Problem details, limits, idempotency, throttling and probes: the conventions every endpoint shares."""

from __future__ import annotations

import threading

import pytest
from django.urls import path
from rest_framework.request import Request
from rest_framework.response import Response

from api.idempotency import idempotent
from api.views import TenantAPIView
from core.redis import get_redis
from tenants.models import IdempotencyRecord
from tenants.scope import tenant_scope

pytestmark = pytest.mark.django_db

CALLS: list[dict] = []


class EchoApi(TenantAPIView):
    @idempotent
    def post(self, request: Request) -> Response:
        CALLS.append(request.data)
        if request.data.get("fail"):
            return Response({"detail": "no"}, status=400)
        return Response({"echo": request.data, "n": len(CALLS)}, status=201)


urlpatterns = [path("v1/echo", EchoApi.as_view(), name="echo")]


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


def test_missing_credentials_answer_401_problem(anon_api) -> None:
    response = anon_api.get("/v1/tenant")
    assert response.status_code == 401
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["type"] == "/problems/not-authenticated"
    assert body["status"] == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_revoked_key_is_refused(ctx_a, tenant_a) -> None:
    from tenants.services import api_key_revoke

    api_key_revoke(tenant=tenant_a, prefix=ctx_a.api_key.prefix)
    response = ctx_a.client.get("/v1/tenant")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]


@pytest.mark.urls(__name__)
def test_read_only_key_cannot_write(tenant_a) -> None:
    from rest_framework.test import APIClient

    from tenants.services import api_key_create

    issued = api_key_create(tenant=tenant_a, name="ro", scopes=["read"])
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.raw}")
    response = client.post("/v1/echo", {"a": 1}, format="json")
    assert response.status_code == 403
    assert response.json()["type"] == "/problems/permission-denied"


@pytest.mark.urls(__name__)
def test_malformed_json_is_a_400_problem(api_a) -> None:
    response = api_a.post("/v1/echo", data=b"{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["type"] == "/problems/malformed-request"


@pytest.mark.urls(__name__)
def test_body_over_the_limit_is_413(api_a, settings) -> None:
    settings.ENGRAM = {**settings.ENGRAM, "MAX_BODY_BYTES": 100}
    response = api_a.post("/v1/echo", {"text": "x" * 500}, format="json")
    assert response.status_code == 413
    assert response.json()["type"] == "/problems/payload-too-large"
    assert CALLS == []


@pytest.mark.urls(__name__)
def test_idempotency_key_replays_the_first_answer(api_a, tenant_a) -> None:
    first = api_a.post("/v1/echo", {"a": 1}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    second = api_a.post("/v1/echo", {"a": 1}, format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert first.status_code == second.status_code == 201
    assert first.json() == second.json()
    assert second["Idempotent-Replayed"] == "true"
    assert len(CALLS) == 1
    with tenant_scope(tenant_a):
        assert IdempotencyRecord.objects.count() == 1


@pytest.mark.urls(__name__)
def test_idempotency_key_with_another_payload_is_422(api_a) -> None:
    api_a.post("/v1/echo", {"a": 1}, format="json", HTTP_IDEMPOTENCY_KEY="k2")
    response = api_a.post("/v1/echo", {"a": 2}, format="json", HTTP_IDEMPOTENCY_KEY="k2")
    assert response.status_code == 422
    assert response["Content-Type"] == "application/problem+json"
    assert len(CALLS) == 1


@pytest.mark.urls(__name__)
def test_idempotency_key_in_flight_is_409(api_a, tenant_a) -> None:
    import hashlib

    lock = f"engram:idem:{tenant_a.id}:{hashlib.sha256(b'k3').hexdigest()}"
    get_redis().set(lock, "1", ex=60)
    response = api_a.post("/v1/echo", {"a": 1}, format="json", HTTP_IDEMPOTENCY_KEY="k3")
    assert response.status_code == 409
    assert CALLS == []


@pytest.mark.urls(__name__)
def test_failed_request_is_not_stored_and_can_be_retried(api_a) -> None:
    assert api_a.post("/v1/echo", {"fail": True}, format="json", HTTP_IDEMPOTENCY_KEY="k4").status_code == 400
    assert api_a.post("/v1/echo", {"fail": True}, format="json", HTTP_IDEMPOTENCY_KEY="k4").status_code == 400
    assert len(CALLS) == 2


@pytest.mark.urls(__name__)
def test_idempotency_keys_are_per_tenant(api_a, api_b) -> None:
    assert api_a.post("/v1/echo", {"a": 1}, format="json", HTTP_IDEMPOTENCY_KEY="same").status_code == 201
    response = api_b.post("/v1/echo", {"a": 2}, format="json", HTTP_IDEMPOTENCY_KEY="same")
    assert response.status_code == 201
    assert "Idempotent-Replayed" not in response
    assert len(CALLS) == 2


def test_throttle_answers_429_with_retry_after(ctx_a, tenant_a) -> None:
    tenant_a.settings = {"rate_limit_per_minute": 3}
    tenant_a.save(update_fields=["settings"])
    codes = [ctx_a.client.get("/v1/tenant").status_code for _ in range(5)]
    assert codes[:3] == [200, 200, 200]
    assert codes[3:] == [429, 429]
    response = ctx_a.client.get("/v1/tenant")
    assert response.json()["type"] == "/problems/rate-limited"
    assert 1 <= int(response["Retry-After"]) <= 61


def test_throttle_counter_is_atomic_under_threads(ctx_a, tenant_a) -> None:
    from api.throttling import TenantRateThrottle

    tenant_a.settings = {"rate_limit_per_minute": 50}
    tenant_a.save(update_fields=["settings"])

    class Req:
        user = ctx_a.client and type("P", (), {})()

    from api.auth import TenantPrincipal

    req = Req()
    req.user = TenantPrincipal(tenant_a, ctx_a.api_key)
    allowed: list[bool] = []
    lock = threading.Lock()

    def hit() -> None:
        ok = TenantRateThrottle().allow_request(req, None)  # type: ignore[arg-type]
        with lock:
            allowed.append(ok)

    threads = [threading.Thread(target=hit) for _ in range(80)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert allowed.count(True) == 50


def test_probes(client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["checks"]["database"]["ok"] is True
    assert ready.json()["checks"]["redis"]["ok"] is True


def test_metrics_are_prometheus_text(client) -> None:
    response = client.get("/metrics")
    assert response.status_code == 200
    assert b"django_http_requests" in response.content


def test_openapi_schema_and_docs(client) -> None:
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"openapi: 3" in schema.content
    assert client.get("/api/docs/").status_code == 200

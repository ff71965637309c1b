"""Who may read /metrics on the API port: a bearer token (METRICS_TOKEN), or a client address on an
allow-list (METRICS_ALLOWED_ADDRESSES, addresses or networks; loopback by default)."""

from __future__ import annotations

import hmac
import ipaddress
import json

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from core.addresses import client_address
from core.scrape import scrape_registry

PROBLEM_CONTENT_TYPE = "application/problem+json"


def _problem(status: int, title: str, detail: str) -> HttpResponse:
    body = {"type": "/problems/permission-denied", "title": title, "status": status, "detail": detail}
    response = HttpResponse(json.dumps(body), status=status, content_type=PROBLEM_CONTENT_TYPE)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def _address_allowed(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for allowed in settings.METRICS_ALLOWED_ADDRESSES:
        try:
            if ip in ipaddress.ip_network(allowed, strict=False):
                return True
        except ValueError:
            continue
    return False


def _token_ok(request: HttpRequest) -> bool:
    token: str = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


@csrf_exempt
def metrics(request: HttpRequest) -> HttpResponse:
    # Behind a trusted proxy, the client it forwards for: otherwise a proxy on loopback would pass on all.
    if _address_allowed(client_address(request.META)) or _token_ok(request):
        return HttpResponse(generate_latest(scrape_registry()), content_type=CONTENT_TYPE_LATEST)
    if settings.METRICS_TOKEN:
        return _problem(401, "Not authenticated", "Metrics need 'Authorization: Bearer <METRICS_TOKEN>'.")
    return _problem(403, "Permission denied", "Metrics are served to the addresses of METRICS_ALLOWED_ADDRESSES.")

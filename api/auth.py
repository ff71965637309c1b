"""Bearer API-key authentication. A successful authentication enters the key's tenant scope."""

from __future__ import annotations

import hmac
import re
from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from api.auth_failures import AuthFailureThrottle
from core.addresses import client_address
from core.db import set_local, set_locals_with_next_statement
from tenants import scope
from tenants.models import ApiKey, Tenant, hash_key

# What every authentication failure of a missing or malformed header says: the one format accepted.
BEARER_FORMAT = "Send the API key in the header Authorization: Bearer <api key>."

# The transaction-local setting that opens one key's row of the key table to its lookup.
PREFIX_SETTING = "app.api_key_prefix"

# Touch last_used_at at most this often, so that reads do not turn into writes on every request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class TenantPrincipal:
    """request.user for API calls: the tenant, seen through one key."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, tenant: Tenant, api_key: ApiKey) -> None:
        self.tenant = tenant
        self.api_key = api_key

    def __str__(self) -> str:
        return f"{self.tenant.slug}:{self.api_key.prefix}"


def _parse(raw: str) -> str | None:
    parts = raw.split("_")
    # A prefix is hex (ApiKey.generate); anything else reaches neither the database nor Redis.
    if len(parts) < 3 or parts[0] != "eng" or not re.fullmatch(r"[0-9a-f]{1,64}", parts[1]):
        return None
    return parts[1]


class ApiKeyAuthentication(BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[TenantPrincipal, ApiKey] | None:
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        raw = header[1].decode("utf-8", "replace") if len(header) == 2 else ""
        prefix = _parse(raw)
        try:
            api_key = self._verify(header, raw, prefix)
        except exceptions.AuthenticationFailed:
            if prefix is not None and len(header) == 2:
                # The lookup left the key table open to this prefix: close it.
                set_local(PREFIX_SETTING, "")
            # Only failures are refused: a key carries 256 bits, so letting a right one through costs
            # nothing in guessing, and refusing it would let anyone lock out an address or a key.
            throttle = AuthFailureThrottle(address=client_address(request.META), prefix=prefix)
            wait = throttle.wait()
            if wait is not None:
                raise exceptions.Throttled(wait, "Too many failed authentications; retry later.") from None
            throttle.record_failure()
            raise
        tenant = api_key.tenant
        scope.activate([tenant], also={PREFIX_SETTING: ""})
        now = timezone.now()
        if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        return TenantPrincipal(tenant, api_key), api_key

    def _verify(self, header: list[bytes], raw: str, prefix: str | None) -> ApiKey:
        if len(header) != 2:
            raise exceptions.AuthenticationFailed(f"The Authorization header is malformed. {BEARER_FORMAT}")
        if prefix is None:
            raise exceptions.AuthenticationFailed("Invalid API key.")
        api_key = self._lookup(prefix)
        if api_key is None or not hmac.compare_digest(api_key.key_hash, hash_key(raw)):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        if api_key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This API key has been revoked.")
        if not api_key.tenant.active:
            raise exceptions.AuthenticationFailed("This tenant is not active.")
        return api_key

    @staticmethod
    def _lookup(prefix: str) -> ApiKey | None:
        # The key table is under row-level security like every tenant table; its policy lets a row be
        # read, never written, when the transaction names that row's prefix. Nothing else is visible.
        # The prefix is named in the lookup's round trip, and cleared as the tenant's scope is entered
        # (or as the authentication fails).
        with set_locals_with_next_statement({PREFIX_SETTING: prefix}), scope.scopes_disabled():
            # With its tenant: one query fewer on every request.
            return ApiKey.objects.filter(prefix=prefix).select_related("tenant").first()

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="engram"'


def request_tenant(request: Any) -> Tenant:
    """The tenant of an authenticated API request."""
    user = request.user
    if not isinstance(user, TenantPrincipal):
        raise exceptions.NotAuthenticated(f"No API key was sent. {BEARER_FORMAT}")
    return user.tenant

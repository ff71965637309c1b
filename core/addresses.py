"""The client's address: the peer's, or, when the peer is a configured reverse proxy
(ENGRAM_TRUSTED_PROXIES), the right-most address of X-Forwarded-For that is not one of those proxies.

gunicorn sets REMOTE_ADDR to the peer whatever `--forwarded-allow-ips` says (that setting only decides
whom it believes about the scheme), so behind a proxy the peer is the proxy. The left part of
X-Forwarded-For is whatever the client sent; only what the trusted proxies appended is believed."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(entry.strip(), strict=False) for entry in entries if entry.strip())


def address_in(address: str, networks: Iterable[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in networks)


def client_address(meta: Mapping[str, Any]) -> str:
    peer = str(meta.get("REMOTE_ADDR") or "")
    proxies = _networks(tuple(settings.ENGRAM["TRUSTED_PROXIES"]))
    if proxies and address_in(peer, proxies):
        hops = [hop.strip() for hop in str(meta.get("HTTP_X_FORWARDED_FOR") or "").split(",")]
        for hop in reversed(hops):
            if hop and not address_in(hop, proxies):
                return hop[:64]
    return peer[:64] or "unknown"

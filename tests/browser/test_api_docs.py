"""The API documentation page in a real browser with the network off: its scripts and styles come from
this server, not from a CDN."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def offline(page: Any) -> list[str]:
    """Abort every request that leaves this machine; return the list of what was refused."""
    refused: list[str] = []

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if urlsplit(url).hostname in LOOPBACK:
            request_route.continue_()
        else:
            refused.append(url)
            request_route.abort()

    page.route("**/*", route)
    return refused


def test_swagger_ui_renders_the_operations_with_the_network_blocked(live_server: Any, page: Any, shoot: Any) -> None:
    refused = offline(page)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".opblock", timeout=20_000)
    shoot("api-docs-offline")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any(path.startswith("/v1/episodes") for path in paths), paths[:10]
    assert refused == []

"""The admin's small surprises, at 1280 px in a real browser: model names as people write them, a
"View site" link that leads somewhere, and no Save button on a fact that cannot be edited."""

from __future__ import annotations

import json
from typing import Any

import pytest

from semantic.models import ActorType
from semantic.services import fact_upsert
from semantic.types import Actor, FactCandidate
from tenants.scope import tenant_scope
from tests.factories.admin import build_memory, make_operator
from tests.factories.tenants import TenantFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-operator-1"


@pytest.fixture
def narrow(page: Any) -> Any:
    page.set_viewport_size({"width": 1280, "height": 900})
    return page


def test_names_view_site_and_a_read_only_fact_at_1280px(live_server: Any, narrow: Any, shoot: Any) -> None:
    tenant: Any = TenantFactory(name="Acme Support", slug="acme")
    memory = build_memory(tenant, subject="alice")
    make_operator("operator-a", tenant, password=PASSWORD)
    page, base = narrow, live_server.url
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", "operator-a")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")

    index = page.locator("#content-main").inner_text()
    assert "Entity aliases" in index and "aliass" not in index
    assert "API keys" in index and "Api keys" not in index

    page.click("#user-tools >> text=View site")
    assert page.url.startswith(f"{base}/dashboard/")  # one tenant: its own dashboard
    assert page.locator("body").inner_text().strip() and "Page not found" not in page.content()

    assert memory.old_fact is not None and memory.new_fact is not None
    page.goto(f"{base}/admin/semantic/fact/{memory.old_fact.id}/change/")
    shoot("admin-superseded-fact-1280")
    assert "superseded" in page.locator("#content-main").inner_text()
    assert page.locator("input[name=_save], input[name=_continue]").count() == 0
    page.goto(f"{base}/admin/semantic/fact/{memory.new_fact.id}/change/")
    assert page.locator("input[name=_save]").count() == 1

    # A LangGraph EngramStore item: the Value column shows the item, not the store's wrapper.
    with tenant_scope(tenant):
        stored = {"created_at": "2026-12-01T10:00:00+00:00", "key": "food", "value": {"text": "sushi"}}
        fact_upsert(
            tenant=tenant,
            candidate=FactCandidate(
                subject="alice", entity="langgraph/memories/alice", attribute="food", value=json.dumps(stored),
                statement="alice likes sushi", category="preferences", confidence=1.0,
            ),
            actor=Actor(type=ActorType.API_KEY, id="store"),
        )  # fmt: skip
    page.goto(f"{base}/admin/semantic/fact/?q=langgraph/memories/alice")
    row = page.locator("#result_list tbody tr").first.inner_text()
    assert '{"text": "sushi"}' in row and "created_at" not in row

"""The screens on data the demo generates: part of the support-agent script is replayed through the
API (memory on, consolidated), then an operator reads it in the admin and the dashboard."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest

from demo.runner import seed_demo
from demo.script import ANA, BEN
from tests.factories.admin import make_operator
from tests.factories.tenants import TenantFactory

pytestmark = [pytest.mark.browser, pytest.mark.live, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-demo-operator"
ANA_PART = dataclasses.replace(ANA, conversations=ANA.conversations[:7])
BEN_PART = dataclasses.replace(BEN, conversations=BEN.conversations[:3])


def test_demo_memory_in_the_admin_and_the_dashboard(live_server: Any, page: Any, shoot: Any) -> None:
    tenant = TenantFactory(name="Demo", slug="demo")
    assert seed_demo(tenant=tenant, url=live_server.url, users=(ANA_PART, BEN_PART))
    make_operator("demo-operator", tenant, password=PASSWORD)
    base = live_server.url

    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", "demo-operator")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/admin/")

    page.click("text=Memory dashboard")
    page.wait_for_url(f"{base}/dashboard/demo/")
    assert page.locator("#hit-rates tbody tr").count() >= 10  # one row per conversation with feedback
    triggers = page.locator("#trigger-totals").inner_text()
    assert "session_ended" in triggers
    assert "No consolidation run yet." not in triggers
    assert page.locator("#subjects").inner_text().count("ana.ruiz") == 1
    shoot("demo-dashboard-tenant")

    page.click("#subjects >> text=ana.ruiz")
    page.wait_for_url(re.compile(r".*/dashboard/demo/subjects/ana.ruiz/"))
    current = page.locator("#facts-current").inner_text()
    assert "PostgreSQL 16" in current  # the migration in her fifth conversation superseded 15
    page.click("text=Past values")
    assert "PostgreSQL 15" in page.locator("#facts-past").inner_text()
    assert page.locator("details.engram-session").count() == 7
    shoot("demo-dashboard-subject")

    page.goto(f"{base}/admin/semantic/factchange/?entity=ana.ruiz&kind__exact=superseded")
    assert "PostgreSQL 15" in page.locator("#result_list").inner_text()
    page.goto(f"{base}/admin/procedural/procedure/")
    assert page.locator("#result_list tbody tr").count() >= 1  # the seeded procedures
    page.goto(f"{base}/admin/consolidation/consolidationrun/")
    assert page.locator("#result_list tbody tr").count() >= 10
